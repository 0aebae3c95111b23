package phase1

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// namespaceID checks that path is a network namespace (an nsfs file of
// type CLONE_NEWNET; anything else gets a [*NotNamespaceError] saying what
// the path is) and returns the device and inode of its file. Every path of
// one namespace (/proc/<pid>/ns/net, a bind mount under /var/run/netns) is
// the same nsfs inode, so the pair identifies the namespace and a lock
// named after it locks the namespace.
func namespaceID(path string) (dev, ino uint64, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: %w", path, err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		return 0, 0, &NotNamespaceError{Path: path, What: fileKind(st.Mode)}
	}
	typ, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
	if err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: namespace type: %w", path, err)
	}
	if typ != unix.CLONE_NEWNET {
		return 0, 0, &NotNamespaceError{Path: path, What: namespaceKind(typ)}
	}
	return uint64(st.Dev), st.Ino, nil
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
