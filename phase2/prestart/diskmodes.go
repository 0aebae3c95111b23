package prestart

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/domxml"
)

// DiskModes is the disk-modes step: once every disk source exists, each
// disk's cache and I/O modes are set from what its file system supports
// (domxml.SetDriverModes), as KubeVirt's preStartHook does last: cache
// none where the source and its backing file open with O_DIRECT, else
// writethrough; io native for a block device or a preallocated raw file
// with cache none. A VMI's cache none on a source without O_DIRECT fails
// the step.
type DiskModes struct{}

// Name is "disk-modes".
func (DiskModes) Name() string { return "disk-modes" }

// Run sets the modes of every disk with a file or block source.
func (DiskModes) Run(ctx context.Context, st *State) error {
	dom := st.Hook.Domain
	if dom.Devices == nil {
		return nil
	}
	check := st.Hook.DirectIO
	if check == nil {
		check = DirectIOSupported
	}
	for i := range dom.Devices.Disks {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := &dom.Devices.Disks[i]
		path, block := diskSource(d)
		if path == "" {
			continue
		}
		direct, err := check(path)
		if err != nil {
			return diskError(volumeOf(d), path, err)
		}
		if b := d.BackingStore; direct && b != nil && b.Source != nil && b.Source.File != nil {
			if direct, err = check(b.Source.File.File); err != nil {
				return diskError(volumeOf(d), b.Source.File.File, err)
			}
		}
		prealloc := !block && d.Driver != nil && d.Driver.Type == "raw" && preallocated(path)
		if err := domxml.SetDriverModes(d, direct, prealloc); err != nil {
			return diskError(volumeOf(d), path, err)
		}
		st.Log.Info("disk modes set", "volume", volumeOf(d), "path", path, "cache", d.Driver.Cache, "io", d.Driver.IO, "directIO", direct)
	}
	return nil
}

func diskSource(d *libvirtxml.DomainDisk) (path string, block bool) {
	switch s := d.Source; {
	case s == nil:
	case s.File != nil:
		return s.File.File, false
	case s.Block != nil:
		return s.Block.Dev, true
	}
	return "", false
}

func volumeOf(d *libvirtxml.DomainDisk) string {
	if d.Alias == nil {
		return ""
	}
	return d.Alias.Name[min(len(domxml.UserAliasPrefix), len(d.Alias.Name)):]
}
