package cloudinit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/diskfs/go-diskfs/backend"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"
	"github.com/virtnet/virtnet/internal/safefile"
)

// Volume labels (ISO 9660 volume identifiers) the guest looks for.
const (
	NoCloudLabel     = "cidata"
	ConfigDriveLabel = "config-2"
	SysprepLabel     = "unattendCD"
)

// stagingSuffix is appended to an image's path while it is being written.
const stagingSuffix = ".staging"

// isoFile is one file of an image: a slash-separated path relative to the
// image root, and its content.
type isoFile struct {
	name string
	data []byte
}

// writeISO writes files as an ISO 9660 image with Rock Ridge and Joliet,
// labelled label, to isoPath: through "<isoPath>.staging", synced, mode
// 0644, renamed into place, the directory synced. On error nothing new is
// left behind and an existing image at isoPath is untouched.
func writeISO(ctx context.Context, isoPath, label string, files []isoFile) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(isoPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cloudinit: image %s: %w", isoPath, err)
	}
	// The scratch tree holds decoded user data, which may be secret: a 0700
	// directory beside the image (so it never lands in a shared /tmp), with
	// a 0755 root inside it because Rock Ridge records the root's mode.
	scratch, err := os.MkdirTemp(dir, "."+filepath.Base(isoPath)+".work-")
	if err != nil {
		return fmt.Errorf("cloudinit: image %s: scratch directory: %w", isoPath, err)
	}
	defer func() {
		if rerr := os.RemoveAll(scratch); rerr != nil && err == nil {
			err = fmt.Errorf("cloudinit: image %s: remove scratch directory: %w", isoPath, rerr)
		}
	}()
	root := filepath.Join(scratch, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return fmt.Errorf("cloudinit: image %s: %w", isoPath, err)
	}
	for _, f := range files {
		if err := writeScratch(root, f); err != nil {
			return fmt.Errorf("cloudinit: image %s: file %q: %w", isoPath, f.name, err)
		}
	}

	out, err := os.OpenFile(isoPath+stagingSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cloudinit: image %s: %w", isoPath, err)
	}
	// ctx's error comes back as it is; every other (filling the image,
	// sync, close, rename) is wrapped here.
	var ctxErr error
	err = safefile.Replace(out, isoPath, func(out *os.File) error { return fillISO(out, root, label) }, func(st safefile.Stage) error {
		if st != safefile.Synced {
			return nil
		}
		ctxErr = ctx.Err()
		return ctxErr
	})
	if err != nil && err != ctxErr {
		err = fmt.Errorf("cloudinit: image %s: %w", isoPath, err)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

// writeScratch writes f under root, creating its parent directories.
func writeScratch(root string, f isoFile) error {
	clean := path.Clean("/" + f.name)
	if clean == "/" || strings.Contains(f.name, "\\") {
		return errors.New("not a file path")
	}
	p := filepath.Join(root, filepath.FromSlash(clean))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, f.data, 0o644)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cloudinit: sync directory %s: %w", dir, err)
	}
	defer func() { _ = d.Close() }() // read-only handle
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cloudinit: sync directory %s: %w", dir, err)
	}
	return nil
}

// Offsets in an ISO 9660 volume descriptor (ECMA-119 8.4 and 8.5).
const (
	sectorSize       = 2048
	firstDescriptor  = 16 * sectorSize
	volumeIDOffset   = 40
	volumeIDLength   = 32
	expirationOffset = 847
	dateLength       = 17
	typePrimary      = 1
	typeSupplement   = 2 // Joliet
	typeTerminator   = 255
	maxDescriptors   = 8
)

// fixDescriptors corrects two fields go-diskfs v1.9.4 writes differently
// from ECMA-119 and from xorrisofs: the volume identifier is padded with
// NULs instead of spaces (UCS-2 spaces in the Joliet descriptor), and the
// volume expiration date is the creation time, which says the data is
// already obsolete, instead of "not specified" (sixteen '0' digits and a
// zero offset).
func fixDescriptors(f *os.File) error {
	buf := make([]byte, sectorSize)
	for i := range maxDescriptors {
		off := int64(firstDescriptor + i*sectorSize)
		if _, err := f.ReadAt(buf, off); err != nil {
			return fmt.Errorf("read volume descriptor %d: %w", i, err)
		}
		switch buf[0] {
		case typeTerminator:
			return nil
		case typePrimary, typeSupplement:
		default:
			continue
		}
		id := buf[volumeIDOffset : volumeIDOffset+volumeIDLength]
		if buf[0] == typePrimary {
			for j := len(id) - 1; j >= 0 && id[j] == 0; j-- {
				id[j] = ' '
			}
		} else {
			for j := len(id) - 2; j >= 0 && id[j] == 0 && id[j+1] == 0; j -= 2 {
				id[j+1] = ' '
			}
		}
		exp := buf[expirationOffset : expirationOffset+dateLength]
		for j := range dateLength - 1 {
			exp[j] = '0'
		}
		exp[dateLength-1] = 0
		if _, err := f.WriteAt(buf, off); err != nil {
			return fmt.Errorf("write volume descriptor %d: %w", i, err)
		}
	}
	return errors.New("no volume descriptor set terminator")
}

// imageFile is the go-diskfs backend for a freshly truncated image file.
// It works around two behaviours of go-diskfs v1.9.4's Finalize:
//
//   - it ignores the errors of most of its writes: the first one is kept
//     and returned by finish;
//   - after each file's data it writes a sector of zeros when the size is a
//     multiple of 2048 (an empty file included), over the sector that
//     follows; after the last file that is the Joliet root directory, which
//     then reads as empty (seen with an empty user-data, as KubeVirt writes
//     when there is only network data). A new file already reads as zeros,
//     so writes of zeros are skipped and only extend the file (in finish).
type imageFile struct {
	*os.File
	end int64 // end of the furthest write, skipped ones included
	err error // first write error
}

var _ backend.Storage = (*imageFile)(nil)

// WriteAt writes p unless it is all zeros.
func (f *imageFile) WriteAt(p []byte, off int64) (int, error) {
	if e := off + int64(len(p)); e > f.end {
		f.end = e
	}
	if allZero(p) {
		return len(p), nil
	}
	n, err := f.File.WriteAt(p, off)
	if err != nil && f.err == nil {
		f.err = err
	}
	return n, err
}

// Sys returns the file itself.
func (f *imageFile) Sys() (*os.File, error) { return f.File, nil }

// Writable returns f, whose WriteAt filters zeros.
func (f *imageFile) Writable() (backend.WritableFile, error) { return f, nil }

// Path is the file's name.
func (f *imageFile) Path() string { return f.Name() }

// finish reports the first write error and extends the file over skipped
// trailing zeros.
func (f *imageFile) finish() error {
	if f.err != nil {
		return f.err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < f.end {
		return f.Truncate(f.end)
	}
	return nil
}

func allZero(p []byte) bool {
	for _, b := range p {
		if b != 0 {
			return false
		}
	}
	return true
}

// ISOAlignment is the size every image is padded to a multiple of, with
// zeros after the file system, as KubeVirt's xorrisofs -partition_cyl_align
// on does (1 MiB cylinders). QEMU opens a writable disk with cache none
// (O_DIRECT) only when its size is a multiple of the device's request
// alignment.
const ISOAlignment = 1 << 20

// padTo extends f with zeros (sparse) to a multiple of align.
func padTo(f *os.File, align int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if r := st.Size() % align; r != 0 {
		return f.Truncate(st.Size() + align - r)
	}
	return nil
}

// fillISO fills out with the ISO 9660 image of the files under root
// (writeISO names the image in its errors).
func fillISO(out *os.File, root, label string) error {
	img := &imageFile{File: out}
	fsys, err := iso9660.Create(img, 0, 0, sectorSize, root)
	if err != nil {
		return err
	}
	if err := fsys.Finalize(iso9660.FinalizeOptions{RockRidge: true, Joliet: true, VolumeIdentifier: label}); err != nil {
		return fmt.Errorf("write ISO 9660: %w", err)
	}
	if err := img.finish(); err != nil {
		return fmt.Errorf("write ISO 9660: %w", err)
	}
	for _, fix := range []func(*os.File) error{fixJolietSubdirs, fixDescriptors} {
		if err := fix(out); err != nil {
			return err
		}
	}
	if err := padTo(out, ISOAlignment); err != nil {
		return fmt.Errorf("pad: %w", err)
	}
	// Chmod beats the umask: the image must be readable by QEMU's user.
	return out.Chmod(0o644)
}
