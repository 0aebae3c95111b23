package prestart

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

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
