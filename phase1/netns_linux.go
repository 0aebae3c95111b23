package phase1

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openNamespace opens path after checking that it is a network namespace
// (an nsfs file of type CLONE_NEWNET); anything else gets a
// [*NotNamespaceError] saying what the path is. Every path of one
// namespace (/proc/<pid>/ns/net, a bind mount under /var/run/netns) is the
// same nsfs inode, so a flock on the file locks the namespace.
func openNamespace(path string) (f *os.File, err error) {
	f, err = os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	return f, checkNamespace(f, path)
}

func checkNamespace(f *os.File, path string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return fmt.Errorf("open network namespace %s: %w", path, err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		return &NotNamespaceError{Path: path, What: fileKind(st.Mode)}
	}
	typ, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
	if err != nil {
		return fmt.Errorf("open network namespace %s: namespace type: %w", path, err)
	}
	if typ != unix.CLONE_NEWNET {
		return &NotNamespaceError{Path: path, What: namespaceKind(typ)}
	}
	return nil
}

func fileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	}
	return "a file outside nsfs"
}

func namespaceKind(typ int) string {
	for _, k := range []struct {
		flag int
		name string
	}{
		{unix.CLONE_NEWNS, "a mount namespace"}, {unix.CLONE_NEWUTS, "a UTS namespace"},
		{unix.CLONE_NEWIPC, "an IPC namespace"}, {unix.CLONE_NEWUSER, "a user namespace"},
		{unix.CLONE_NEWPID, "a PID namespace"}, {unix.CLONE_NEWCGROUP, "a cgroup namespace"},
		{unix.CLONE_NEWTIME, "a time namespace"},
	} {
		if typ == k.flag {
			return k.name
		}
	}
	return fmt.Sprintf("a namespace of type %#x", typ)
}

// namespaceID is the device and inode of an open namespace file: the same
// for every path of one namespace.
func namespaceID(f *os.File) (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, fmt.Errorf("network namespace %s: %w", f.Name(), err)
	}
	return uint64(st.Dev), st.Ino, nil
}
