package prestart

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"

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
			return &DiskError{Volume: volumeOf(d), Path: path, Err: err}
		}
		if b := d.BackingStore; direct && b != nil && b.Source != nil && b.Source.File != nil {
			if direct, err = check(b.Source.File.File); err != nil {
				return &DiskError{Volume: volumeOf(d), Path: b.Source.File.File, Err: err}
			}
		}
		prealloc := !block && d.Driver != nil && d.Driver.Type == "raw" && preallocated(path)
		if err := domxml.SetDriverModes(d, direct, prealloc); err != nil {
			return &DiskError{Volume: volumeOf(d), Path: path, Err: err}
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

// DirectIOSupported reports whether path can be opened with O_DIRECT,
// which QEMU needs for cache none: an open that fails with EINVAL means
// the file system does not support it. A path that does not exist is tested
// through a probe file created, and removed, in its directory. The open
// does not block (O_NONBLOCK) and reads nothing.
func DirectIOSupported(path string) (bool, error) {
	probe := ""
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		probe = filepath.Join(filepath.Dir(path), ".virtnet-directio-probe")
		path = probe
	}
	flags := os.O_RDONLY | syscall.O_DIRECT | syscall.O_NONBLOCK
	if probe != "" {
		flags |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if probe != "" && err == nil {
		defer os.Remove(probe)
	}
	if errors.Is(err, syscall.EINVAL) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// preallocated reports whether a raw file has all its blocks allocated
// (KubeVirt asks qemu-img whether the virtual size fits the actual one).
func preallocated(path string) bool {
	var s syscall.Stat_t
	if err := syscall.Stat(path, &s); err != nil || s.Size == 0 {
		return false
	}
	return s.Blocks*512 >= s.Size
}
