package cloudinit

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/virtnet/virtnet/api"
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
	// Logger receives one line per image; nil discards.
	Logger *slog.Logger
}

// Build writes an image for every cloudInitNoCloud, cloudInitConfigDrive
// and sysprep volume of vmi and returns them in volume order.
//
// All sources are read and checked before the first image is written, so
// a bad source ([*SourceError]) leaves the file system untouched. A VMI may
// have at most one volume of each cloud-init kind (the images have fixed
// names; KubeVirt silently used the first). An I/O error while writing
// leaves the images already written, each complete, and nothing partial.
// Building again with the same VMI replaces the images atomically.
func (b *Builder) Build(ctx context.Context, vmi *api.VMI) ([]Disk, error) {
	log := b.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
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
		p, ok := ISOPath(b.Dir, vmi, vol)
		if !ok {
			return nil, &SourceError{Path: fmt.Sprintf("spec.volumes[%d]", i),
				Err: fmt.Errorf("%w: namespace %q, name %q, volume %q", errUnsafeName,
					vmi.Metadata.Namespace, vmi.Metadata.Name, vol.Name)}
		}
		if prev, dup := seen[kind]; dup && kind != KindSysprep {
			return nil, &SourceError{Path: fieldPath,
				Err: fmt.Errorf("%w: second %s volume (first is %s)", ErrAmbiguous, kind, prev)}
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
				jobs = append(jobs, job{d, func(ctx context.Context) error { return NoCloud(ctx, p, data, meta) }})
			} else {
				meta := NewConfigDriveMetadata(vmi)
				jobs = append(jobs, job{d, func(ctx context.Context) error { return ConfigDrive(ctx, p, data, meta) }})
			}
		case KindSysprep:
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

// ISOPath is the image [Builder.Build] writes for vol of vmi under dir, and
// false for a volume that gets no image here (or whose names would leave
// dir). It builds nothing, so the domain XML can name the disk source
// before the images exist.
func ISOPath(dir string, vmi *api.VMI, vol api.Volume) (string, bool) {
	kind, ok := volumeKind(vol)
	if !ok {
		return "", false
	}
	switch kind {
	case KindSysprep:
		if !safeName(vol.Name) {
			return "", false
		}
		return filepath.Join(dir, "sysprep-disks", vol.Name+".iso"), true
	default:
		ns, name := vmi.Metadata.Namespace, vmi.Metadata.Name
		if !safeName(ns) || !safeName(name) {
			return "", false
		}
		file := NoCloudISO
		if kind == KindConfigDrive {
			file = ConfigDriveISO
		}
		return filepath.Join(dir, "cloud-init-data", ns, name, file), true
	}
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

// safeName reports whether s can be one path element.
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}
