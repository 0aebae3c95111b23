package prestart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/internal/safefile"
)

// Storage is the storage step: it makes every file disk source of the
// domain ready (see the package documentation). Volumes without a disk in
// the domain are left alone; cloud-init and sysprep images are later
// steps'.
type Storage struct{}

// Name is "storage".
func (Storage) Name() string { return "storage" }

// ErrNotReadable is matched by the [ErrDisk] error of a source the kubelet
// should have provided but that is missing or unreadable.
var ErrNotReadable = errors.New("disk source missing or not readable")

// Run prepares the disk sources.
func (Storage) Run(ctx context.Context, st *State) error {
	vmi, dom := st.Hook.VMI, st.Hook.Domain
	for i := range vmi.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return err
		}
		vol := &vmi.Spec.Volumes[i]
		if vol.CloudInitNoCloud != nil || vol.CloudInitConfigDrive != nil || vol.Sysprep != nil {
			continue
		}
		src, err := domxml.DiskPath(vmi, i, st.Hook.Dirs)
		if err != nil {
			return err
		}
		disk := findDisk(dom, src.Path)
		if disk == nil {
			st.Log.Info("volume has no disk in the domain; skipped", "volume", vol.Name, "path", src.Path)
			continue
		}
		switch {
		case vol.EmptyDisk != nil:
			err = st.sparse(vol.Name, src.Path, "spec.volumes["+fmt.Sprint(i)+"].emptyDisk.capacity", vol.EmptyDisk.Capacity)
			if err == nil && disk.Driver != nil {
				disk.Driver.Type = "raw"
			}
		case vol.HostDisk != nil && vol.HostDisk.Type == "DiskOrCreate":
			err = st.sparse(vol.Name, src.Path, "spec.volumes["+fmt.Sprint(i)+"].hostDisk.capacity", vol.HostDisk.Capacity)
		case vol.ContainerDisk != nil:
			err = st.overlay(ctx, vol, src)
		default: // PVC, dataVolume, hostDisk of type Disk
			// A regular file or a block device (a PVC in block mode).
			if err = safefile.CheckReadable(src.Path, true); err != nil {
				err = diskError(vol.Name, src.Path, fmt.Errorf("%w: %w", ErrNotReadable, err))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// findDisk is the domain disk whose source is path.
func findDisk(dom *libvirtxml.Domain, path string) *libvirtxml.DomainDisk {
	if dom.Devices == nil {
		return nil
	}
	for i := range dom.Devices.Disks {
		d := &dom.Devices.Disks[i]
		if s := d.Source; s != nil && (s.File != nil && s.File.File == path || s.Block != nil && s.Block.Dev == path) {
			return d
		}
	}
	return nil
}

// sparse creates a sparse raw file of the capacity at path unless a file is
// there already (its content is the VM's: kept, whatever its size).
func (st *State) sparse(volume, path, field, capacity string) error {
	ok, err := exists(path)
	if err != nil {
		return diskError(volume, path, err)
	}
	if ok {
		st.Log.Info("disk image exists; kept", "volume", volume, "path", path)
		return nil
	}
	size, err := api.ParseQuantity(capacity)
	if err != nil || size == 0 {
		if err == nil {
			err = errors.New("zero")
		}
		return diskError(volume, path, fmt.Errorf("%s %q: %w", field, capacity, err))
	}
	if err := st.mkdirAll(filepath.Dir(path)); err != nil {
		return diskError(volume, path, err)
	}
	if err := createFile(path, 0o660, func(f *os.File) error { return f.Truncate(int64(size)) }); err != nil {
		return diskError(volume, path, err)
	}
	st.Created(path)
	st.Log.Info("created sparse raw image", "volume", volume, "path", path, "bytes", size)
	return nil
}

// overlay checks the container disk's image and creates its qcow2 overlay
// unless it exists.
func (st *State) overlay(ctx context.Context, vol *api.Volume, src domxml.DiskSource) error {
	if err := safefile.CheckReadable(src.Backing, true); err != nil {
		return diskError(vol.Name, src.Backing, fmt.Errorf("%w: %w", ErrNotReadable, err))
	}
	ok, err := exists(src.Path)
	if err != nil {
		return diskError(vol.Name, src.Path, err)
	}
	if ok {
		st.Log.Info("overlay exists; kept", "volume", vol.Name, "path", src.Path)
		return nil
	}
	if err := st.mkdirAll(filepath.Dir(src.Path)); err != nil {
		return diskError(vol.Name, src.Path, err)
	}
	tmp := src.Path + stagingSuffix
	cmd := exec.CommandContext(ctx, st.Hook.QemuImg, "create", "-f", "qcow2", "-F", "raw", "-b", src.Backing, tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return diskError(vol.Name, src.Path,
			fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(out.String())))
	}
	if err := os.Rename(tmp, src.Path); err != nil {
		_ = os.Remove(tmp)
		return diskError(vol.Name, src.Path, err)
	}
	st.Created(src.Path)
	st.Log.Info("created overlay", "volume", vol.Name, "path", src.Path, "backing", src.Backing)
	return nil
}
