package phase1

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// namespaceID checks that path is a network namespace (an nsfs file of
// type CLONE_NEWNET; anything else gets a [ErrNotNamespace] saying what
// the path is) and returns the device and inode of its file. Every path of
// one namespace (/proc/<pid>/ns/net, a bind mount under /var/run/netns) is
// the same nsfs inode, so the pair identifies the namespace and a lock
// named after it locks the namespace.
func notNamespace(path, what string, cause error) error {
	err := fmt.Errorf("%s is %s, %w (want /proc/<pid>/ns/net or a bind mount of one, such as /var/run/netns/<name>)", path, what, ErrNotNamespace)
	if cause != nil {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

func namespaceID(path string) (dev, ino uint64, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Permanent: the process whose namespace it was, or the bind
		// mount, is gone; retrying the same path never succeeds.
		return 0, 0, notNamespace(path, "missing (the pod's process or the bind mount is gone)", err)
	}
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
		return 0, 0, notNamespace(path, fileKind(st.Mode), nil)
	}
	typ, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
	if err != nil {
		return 0, 0, fmt.Errorf("open network namespace %s: namespace type: %w", path, err)
	}
	if typ != unix.CLONE_NEWNET {
		return 0, 0, notNamespace(path, namespaceKind(typ), nil)
	}
	return uint64(st.Dev), st.Ino, nil
}

// fileKind names the file type of a netns path that is no namespace.
func fileKind(mode uint32) string {
	kinds := map[uint32]string{
		unix.S_IFREG: "a regular file", unix.S_IFDIR: "a directory", unix.S_IFIFO: "a FIFO",
		unix.S_IFSOCK: "a socket", unix.S_IFCHR: "a character device", unix.S_IFBLK: "a block device",
	}
	return cmp.Or(kinds[mode&unix.S_IFMT], "a file outside nsfs")
}

// namespaceKind names the type of a namespace that is no network one.
func namespaceKind(typ int) string {
	kinds := map[int]string{
		unix.CLONE_NEWNS: "a mount namespace", unix.CLONE_NEWUTS: "a UTS namespace",
		unix.CLONE_NEWIPC: "an IPC namespace", unix.CLONE_NEWUSER: "a user namespace",
		unix.CLONE_NEWPID: "a PID namespace", unix.CLONE_NEWCGROUP: "a cgroup namespace",
		unix.CLONE_NEWTIME: "a time namespace",
	}
	if k, ok := kinds[typ]; ok {
		return k
	}
	return fmt.Sprintf("a namespace of type %#x", typ)
}
