package prestart

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/cloudinit"
)

// CloudInit is the cloud-init step: a NoCloud or ConfigDrive image per
// cloud-init volume, where the domain's disk source says.
type CloudInit struct{}

// Name is "cloud-init".
func (CloudInit) Name() string { return "cloud-init" }

// Run writes the images. Every source is decoded before the first image is
// written, so a bad source writes nothing.
func (CloudInit) Run(ctx context.Context, st *State) error {
	vmi := st.Hook.VMI
	type job struct {
		vol, path string
		write     func(ctx context.Context) error
	}
	var jobs []job
	for i := range vmi.Spec.Volumes {
		vol := &vmi.Spec.Volumes[i]
		src, kind := vol.CloudInitNoCloud, cloudinit.KindNoCloud
		if vol.CloudInitConfigDrive != nil {
			src, kind = vol.CloudInitConfigDrive, cloudinit.KindConfigDrive
		}
		if src == nil {
			continue
		}
		path, err := imagePath(vmi, i, st)
		if err != nil {
			return err
		}
		field := fmt.Sprintf("spec.volumes[%d].%s", i, kind)
		data, err := cloudinit.DecodeSource(ctx, src, field, volumeDir(st.Hook.SecretDir, vol.Name))
		if err != nil {
			return err
		}
		var write func(ctx context.Context) error
		if kind == cloudinit.KindNoCloud {
			meta := cloudinit.NewNoCloudMetadata(vmi)
			if st.Hook.Hostname != "" {
				meta.LocalHostname = st.Hook.Hostname
			}
			write = func(ctx context.Context) error { return cloudinit.NoCloud(ctx, path, data, meta) }
		} else {
			meta := cloudinit.NewConfigDriveMetadata(vmi)
			if st.Hook.Hostname != "" {
				meta.Hostname = st.Hook.Hostname
			}
			// KubeVirt reads the addresses libvirt gave the tagged
			// devices after defining the domain; the hook pins them
			// now instead, so the image is complete before define.
			if err := domxml.PinTagged(domxml.Tags(vmi), st.Hook.Domain); err != nil {
				return err
			}
			meta.Devices = cloudinit.DevicesMetadata(vmi, st.Hook.Domain)
			write = func(ctx context.Context) error { return cloudinit.ConfigDrive(ctx, path, data, meta) }
		}
		jobs = append(jobs, job{vol.Name, path, write})
	}
	for _, j := range jobs {
		if err := st.writeImage(ctx, j.vol, j.path, j.write); err != nil {
			return err
		}
	}
	return nil
}

// Sysprep is the sysprep step: an "unattendCD" image per sysprep volume
// from <SysprepDir>/<volume>.
type Sysprep struct{}

// Name is "sysprep".
func (Sysprep) Name() string { return "sysprep" }

// Run writes the images.
func (Sysprep) Run(ctx context.Context, st *State) error {
	vmi := st.Hook.VMI
	for i := range vmi.Spec.Volumes {
		vol := &vmi.Spec.Volumes[i]
		if vol.Sysprep == nil {
			continue
		}
		path, err := imagePath(vmi, i, st)
		if err != nil {
			return err
		}
		field := fmt.Sprintf("spec.volumes[%d].sysprep", i)
		srcDir := volumeDir(st.Hook.SysprepDir, vol.Name)
		if srcDir == "" {
			return &DiskError{Volume: vol.Name, Path: path, Err: fmt.Errorf("%s: Hook.SysprepDir is not set", field)}
		}
		err = st.writeImage(ctx, vol.Name, path, func(ctx context.Context) error {
			return cloudinit.Sysprep(ctx, path, srcDir, field)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// imagePath is the image of volume i as the domain names it.
func imagePath(vmi *api.VMI, i int, st *State) (string, error) {
	src, err := domxml.DiskPath(vmi, i, st.Hook.Dirs)
	if err != nil {
		return "", err
	}
	if findDisk(st.Hook.Domain, src.Path) == nil {
		st.Log.Info("volume has no disk in the domain; image written anyway", "volume", vmi.Spec.Volumes[i].Name, "path", src.Path)
	}
	return src.Path, nil
}

// writeImage creates the image's directory (recorded) and writes the
// image, recording it when it did not exist before. The cloudinit
// functions write through a staging file: a failure leaves no partial
// image.
func (st *State) writeImage(ctx context.Context, volume, path string, write func(context.Context) error) error {
	existed, err := exists(path)
	if err != nil {
		return &DiskError{Volume: volume, Path: path, Err: err}
	}
	if err := st.mkdirAll(filepath.Dir(path)); err != nil {
		return &DiskError{Volume: volume, Path: path, Err: err}
	}
	if err := write(ctx); err != nil {
		return err
	}
	if !existed {
		st.Created(path)
	}
	st.Log.Info("image written", "volume", volume, "path", path)
	return nil
}

func volumeDir(root, volume string) string {
	if root == "" {
		return ""
	}
	return filepath.Join(root, volume)
}
