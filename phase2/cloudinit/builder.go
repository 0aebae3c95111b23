package cloudinit

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

// Kind is the kind of image a volume becomes; its value is the volume
// source's JSON key.
type Kind string

// The kinds of image this package builds.
const (
	KindNoCloud     Kind = "cloudInitNoCloud"
	KindConfigDrive Kind = "cloudInitConfigDrive"
	KindSysprep     Kind = "sysprep"
)

// Disk is an image built for one volume of a VMI.
type Disk struct {
	Volume string // spec.volumes[].name
	Kind   Kind
	Path   string // the image, the domain disk's source file
}

// Builder builds the cloud-init and sysprep images of a VMI. See the
// package documentation for the layout under Dir and the mount directories.
type Builder struct {
	// Dir is the root the images are written under (KubeVirt:
	// /var/run/kubevirt-ephemeral-disks for cloud-init,
	// /var/run/kubevirt-private for sysprep).
	Dir string
	// SecretDir holds one directory per cloud-init volume with a secret
	// reference, named after the volume (KubeVirt:
	// /var/run/kubevirt-private/secret).
	SecretDir string
	// SysprepDir holds one directory per sysprep volume, named after the
	// volume (KubeVirt: /var/run/kubevirt-private/sysprep).
	SysprepDir string
	// Hostname, when set, replaces the VMI's host name (api.VMI.Hostname)
	// in the NoCloud and ConfigDrive metadata.
	Hostname string
	// Domain, when set, is the domain the images are for: the ConfigDrive
	// metadata lists its tagged devices at their guest PCI addresses
	// ([DevicesMetadata]; pin them first with domxml.PinTagged).
	Domain *libvirtxml.Domain
	// BeforeWrite, when set, is called with each image after every source
	// was read and checked, just before that image is written; its error
	// stops Build and is returned as it is. The preStartHook creates and records the image's
	// directory there, to remove what it created if a later step fails.
	BeforeWrite func(Disk) error
	// Logger receives one line per image; nil discards.
	Logger *slog.Logger
}

// Build writes an image for every cloudInitNoCloud, cloudInitConfigDrive
// and sysprep volume of vmi, at the path [domxml.ISOPath] gives the domain's
// disk, and returns them in volume order. It is the one writer of these
// images: the preStartHook's cloud-init step runs it.
//
// All sources are read and checked before the first image is written, so
// a bad source ([ErrBadSource]) leaves the file system untouched. A VMI may
// have at most one volume of each cloud-init kind (the images have fixed
// names, api.Validate refuses a second; KubeVirt silently used the first):
// a second is an [ErrAmbiguous] error here too. An I/O error while writing
// leaves the images already written, each complete, and nothing partial.
// Building again with the same VMI replaces the images atomically.
func (b *Builder) Build(ctx context.Context, vmi *api.VMI) ([]Disk, error) {
	log := cmp.Or(b.Logger, slog.New(slog.DiscardHandler))
	type job struct {
		disk  Disk
		write func(context.Context) error
	}
	var jobs []job
	seen := map[Kind]string{}
	for i, vol := range vmi.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		kind, ok := volumeKind(vol)
		if !ok {
			continue
		}
		fieldPath := fmt.Sprintf("spec.volumes[%d].%s", i, kind)
		p, ok := domxml.ISOPath(b.Dir, vmi, vol)
		if !ok {
			return nil, sourceError(fmt.Sprintf("spec.volumes[%d]", i), "", fmt.Errorf("%w: namespace %q, name %q, volume %q",
				errUnsafeName, vmi.Metadata.Namespace, vmi.Metadata.Name, vol.Name))
		}
		if prev, dup := seen[kind]; dup && kind != KindSysprep {
			return nil, sourceError(fieldPath, "", fmt.Errorf("%w: second %s volume (first is %s)", ErrAmbiguous, kind, prev))
		}
		seen[kind] = fmt.Sprintf("spec.volumes[%d]", i)
		d := Disk{Volume: vol.Name, Kind: kind, Path: p}
		switch kind {
		case KindNoCloud, KindConfigDrive:
			src := vol.CloudInitNoCloud
			if kind == KindConfigDrive {
				src = vol.CloudInitConfigDrive
			}
			data, err := DecodeSource(ctx, src, fieldPath, b.volumeDir(b.SecretDir, vol.Name))
			if err != nil {
				return nil, err
			}
			if kind == KindNoCloud {
				meta := NewNoCloudMetadata(vmi)
				if b.Hostname != "" {
					meta.LocalHostname = b.Hostname
				}
				jobs = append(jobs, job{d, func(ctx context.Context) error { return NoCloud(ctx, p, data, meta) }})
			} else {
				meta := NewConfigDriveMetadata(vmi)
				if b.Hostname != "" {
					meta.Hostname = b.Hostname
				}
				if b.Domain != nil {
					meta.Devices = DevicesMetadata(vmi, b.Domain)
				}
				jobs = append(jobs, job{d, func(ctx context.Context) error { return ConfigDrive(ctx, p, data, meta) }})
			}
		case KindSysprep:
			if b.SysprepDir == "" {
				return nil, sourceError(fieldPath, "", fmt.Errorf("%w: Builder.SysprepDir is not set", ErrSecretMissing))
			}
			files, err := readSysprep(ctx, b.volumeDir(b.SysprepDir, vol.Name), fieldPath)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, job{d, func(ctx context.Context) error { return writeISO(ctx, p, SysprepLabel, files) }})
		}
	}
	disks := make([]Disk, 0, len(jobs))
	for _, j := range jobs {
		start := time.Now()
		if b.BeforeWrite != nil {
			if err := b.BeforeWrite(j.disk); err != nil {
				return nil, err
			}
		}
		if err := j.write(ctx); err != nil {
			return nil, fmt.Errorf("volume %q: %w", j.disk.Volume, err)
		}
		log.LogAttrs(ctx, slog.LevelInfo, "built image",
			slog.String("volume", j.disk.Volume), slog.String("kind", string(j.disk.Kind)),
			slog.String("path", j.disk.Path), slog.Duration("took", time.Since(start)))
		disks = append(disks, j.disk)
	}
	return disks, nil
}

// volumeDir is <root>/<volume>, or "" when root is unset (then a secret
// reference fails with ErrSecretMissing).
func (b *Builder) volumeDir(root, volume string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, volume)
}

func volumeKind(vol api.Volume) (Kind, bool) {
	switch {
	case vol.CloudInitNoCloud != nil:
		return KindNoCloud, true
	case vol.CloudInitConfigDrive != nil:
		return KindConfigDrive, true
	case vol.Sysprep != nil:
		return KindSysprep, true
	}
	return "", false
}
