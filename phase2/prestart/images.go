package prestart

import (
	"context"
	"path/filepath"

	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/cloudinit"
)

// CloudInit is the image step: the NoCloud or ConfigDrive image of each
// cloud-init volume and the "unattendCD" image of each sysprep volume,
// written by [cloudinit.Builder] (the one writer of these images) where the
// domain's disks name them ([domxml.ISOPath]).
type CloudInit struct{}

// Name is "cloud-init".
func (CloudInit) Name() string { return "cloud-init" }

// Run writes the images. Every source is read and checked before the first
// image is written, so a bad source writes nothing; a second volume of one
// cloud-init kind is refused (api.Validate refuses it first).
func (CloudInit) Run(ctx context.Context, st *State) error {
	h := st.Hook
	vmi := h.VMI
	for _, vol := range vmi.Spec.Volumes {
		if vol.CloudInitConfigDrive != nil {
			// KubeVirt reads the addresses libvirt gave the tagged
			// devices after defining the domain; the hook pins them
			// now instead, so the image is complete before define.
			if err := domxml.PinTagged(domxml.Tags(vmi), h.Domain); err != nil {
				return err
			}
			break
		}
	}
	b := cloudinit.Builder{
		Dir:        h.Dirs.WithDefaults().CloudInitDir,
		SecretDir:  h.SecretDir,
		SysprepDir: h.SysprepDir,
		Hostname:   h.Hostname,
		Domain:     h.Domain,
		Logger:     st.Log,
		BeforeWrite: func(d cloudinit.Disk) error {
			path := d.Path
			if findDisk(h.Domain, path) == nil {
				st.Log.Info("volume has no disk in the domain; image written anyway", "volume", d.Volume, "path", path)
			}
			existed, err := exists(path)
			if err != nil {
				return diskError(d.Volume, path, err)
			}
			if err := st.mkdirAll(filepath.Dir(path)); err != nil {
				return diskError(d.Volume, path, err)
			}
			if !existed {
				// Recorded before the write: the writer leaves no
				// partial image, and removing a missing file is no
				// failure.
				st.Created(path)
			}
			return nil
		},
	}
	_, err := b.Build(ctx, vmi)
	return err
}
