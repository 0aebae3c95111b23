//go:build linux

package kernelvm

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// cpioWriter writes a "newc" cpio archive, the format the kernel unpacks
// into its initial root file system. It is uncompressed on purpose: under
// TCG the guest is slow at decompressing tens of megabytes of test binary,
// and the host is not short of the memory.
type cpioWriter struct {
	w   *bufio.Writer
	ino int
	off int64
	err error
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1}
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
	modeChar = 0o020000
)

func (c *cpioWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(p)
	c.off += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// header writes an entry header and its name.
func (c *cpioWriter) header(name string, mode uint32, size int64, rmajor, rminor uint32) {
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	h := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rmajor, rminor, len(name)+1, 0)
	c.ino++
	c.write([]byte(h))
	c.write([]byte(name + "\x00"))
	c.pad()
}

func (c *cpioWriter) dir(name string) { c.header(name, modeDir|0o755, 0, 0, 0) }

func (c *cpioWriter) charDev(name string, major, minor uint32) {
	c.header(name, modeChar|0o600, 0, major, minor)
}

func (c *cpioWriter) symlink(name, target string) {
	c.header(name, modeLink|0o777, int64(len(target)), 0, 0)
	c.write([]byte(target))
	c.pad()
}

func (c *cpioWriter) bytes(name string, perm uint32, data []byte) {
	c.header(name, modeFile|perm, int64(len(data)), 0, 0)
	c.write(data)
	c.pad()
}

// file copies the host file src into the archive as name.
func (c *cpioWriter) file(name string, perm uint32, src string) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	c.header(name, modeFile|perm, st.Size(), 0, 0)
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, f)
	c.off += n
	if err == nil && n != st.Size() {
		err = fmt.Errorf("%s changed size while being copied", src)
	}
	c.err = err
	c.pad()
}

// close writes the trailer and flushes.
func (c *cpioWriter) close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// Paths inside the guest.
const (
	guestTestBin = "/virtnet.test"
	guestModDir  = "/lib/modules"
)

// initramfsSpec is what goes into one VM's initramfs.
type initramfsSpec struct {
	busybox string
	modDir  string   // host directory with <name>.ko
	modules []string // in load order
	testBin string   // host path of the test binary
	libs    []sharedObj
	init    string // the /init script
}

// writeInitramfs writes the archive to path and returns its size.
func writeInitramfs(path string, s initramfsSpec) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("kernelvm: initramfs %s: %w", path, err)
	}
	c := newCPIOWriter(f)
	for _, d := range []string{"bin", "dev", "etc", "lib", "lib/modules", "proc", "root", "run", "sys", "tmp", "var"} {
		c.dir(d)
	}
	// The kernel opens /dev/console for init's stdio before init can mount
	// devtmpfs.
	c.charDev("dev/console", 5, 1)
	c.file("bin/busybox", 0o755, s.busybox)
	c.symlink("bin/sh", "busybox")
	for _, m := range s.modules {
		c.file(strings.TrimPrefix(guestModDir, "/")+"/"+m+".ko", 0o644, filepath.Join(s.modDir, m+".ko"))
	}
	madeDirs := map[string]bool{"lib": true}
	for _, o := range s.libs {
		// Parent directories first (e.g. lib64 for the loader).
		parts := strings.Split(filepath.Dir(o.guest), "/")
		for i := range parts {
			if d := strings.Join(parts[:i+1], "/"); d != "." && !madeDirs[d] {
				madeDirs[d] = true
				c.dir(d)
			}
		}
		c.file(o.guest, 0o755, o.host)
	}
	c.file(strings.TrimPrefix(guestTestBin, "/"), 0o755, s.testBin)
	c.bytes("init", 0o755, []byte(s.init))
	err = c.close()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("kernelvm: initramfs %s: %w", path, err)
	}
	return c.off, nil
}

// guestLibDir holds the shared libraries of a dynamically linked test
// binary inside the guest; the init points LD_LIBRARY_PATH at it.
const guestLibDir = "/lib/virtnet"

// libSearchPath is where host libraries are looked for (Debian's
// multiarch directories first).
var libSearchPath = []string{
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib",
}

// sharedObj is a host file to copy into the guest at a path.
type sharedObj struct {
	guest string // path in the guest, without the leading slash
	host  string // resolved host path
}

// dynamicDeps returns what a test binary needs to run in the guest besides
// itself: nothing for a static binary; for a dynamic one (CGO_ENABLED=1,
// -race) its program interpreter, at the path the binary names, and its
// DT_NEEDED libraries, transitively, in [guestLibDir]. The host's files
// are used: the guest runs the host's binary on the same architecture.
func dynamicDeps(bin string) ([]sharedObj, error) {
	interp, err := interpreter(bin)
	if err != nil || interp == "" {
		return nil, err
	}
	hostInterp, err := filepath.EvalSymlinks(interp)
	if err != nil {
		return nil, fmt.Errorf("%w: %s asks for the loader %s: %w", ErrDynamicBinary, bin, interp, err)
	}
	objs := []sharedObj{{guest: strings.TrimPrefix(interp, "/"), host: hostInterp}}
	seen := map[string]bool{}
	queue := []string{bin}
	for len(queue) > 0 {
		f, err := elf.Open(queue[0])
		if err != nil {
			return nil, fmt.Errorf("kernelvm: %s: %w", queue[0], err)
		}
		libs, err := f.ImportedLibraries()
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("kernelvm: %s: DT_NEEDED: %w", queue[0], err)
		}
		queue = queue[1:]
		for _, lib := range libs {
			if seen[lib] || strings.HasPrefix(lib, "ld-linux") {
				continue
			}
			seen[lib] = true
			host, err := findLib(lib)
			if err != nil {
				return nil, fmt.Errorf("%w: %s needs %s: %w", ErrDynamicBinary, bin, lib, err)
			}
			objs = append(objs, sharedObj{guest: strings.TrimPrefix(guestLibDir, "/") + "/" + lib, host: host})
			queue = append(queue, host)
		}
	}
	return objs, nil
}

// interpreter returns the ELF file's PT_INTERP, "" for a static binary.
func interpreter(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("kernelvm: test binary %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(io.LimitReader(p.Open(), 4096))
			if err != nil {
				return "", fmt.Errorf("kernelvm: test binary %s: PT_INTERP: %w", path, err)
			}
			return strings.TrimRight(string(b), "\x00"), nil
		}
	}
	return "", nil
}

func findLib(name string) (string, error) {
	for _, d := range libSearchPath {
		p, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s: %w", strings.Join(libSearchPath, ":"), os.ErrNotExist)
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Host-root mode (Options.HostRoot): the 9p mount tag of the host's root
// and where the guest mounts it.
const (
	hostRootTag   = "hostroot"
	hostCacheTag  = "hostcache"
	guestHostRoot = "/host"
)

// initScript returns the guest's /init: mount the pseudo file systems,
// bring lo up, load the modules, run the test binary, print the exit
// marker and reboot, which ends QEMU (-no-reboot; there is no ACPI to power
// off with). Marker lines start with marker and carry the guest
// uptime, for the boot-time figures.
//
// With hostRoot, the host's root (shared read-only over 9p) is mounted at
// /host with fresh proc, sys, dev, a tmpfs on tmp and run, and the test
// binary runs from /host/tmp chrooted into /host: it sees the host's
// programs and files at their own paths, and writes only to /tmp and /run.
func initScript(marker string, modules []string, env [][2]string, args []string, hostRoot bool, cacheDir string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("#!/bin/busybox sh")
	w("/bin/busybox --install -s /bin")
	w("export PATH=/bin")
	w("up() { read -r u _ </proc/uptime; echo \"$u\"; }")
	w("mount -t proc proc /proc")
	w("mount -t sysfs sysfs /sys")
	w("mount -t devtmpfs devtmpfs /dev")
	w("mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts")
	w("mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /run && ln -s /run /var/run")
	w("echo %s init \"$(up)\"", shQuote(marker))
	w("ip link set lo up")
	for _, m := range modules {
		p := guestModDir + "/" + m + ".ko"
		w("insmod %s || echo %s", shQuote(p), shQuote(marker+" insmod-failed "+m))
	}
	w("echo %s modules \"$(up)\"", shQuote(marker))
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shQuote(a)
	}
	if hostRoot {
		h := guestHostRoot
		w("mkdir -p %s", h)
		w("mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 %s %s || echo %s", hostRootTag, h, shQuote(marker+" hostroot-mount-failed"))
		w("mount -t proc proc %s/proc && mount -t sysfs sysfs %s/sys && mount -t devtmpfs devtmpfs %s/dev", h, h, h)
		w("mount -t devpts devpts %s/dev/pts; mount -t tmpfs tmpfs %s/dev/shm", h, h)
		w("mount -t tmpfs tmpfs %s/tmp && mount -t tmpfs tmpfs %s/run", h, h)
		if cacheDir != "" {
			w("mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 %s %s || echo %s", hostCacheTag, shQuote(h+cacheDir), shQuote(marker+" hostcache-mount-failed"))
		}
		w("cp %s %s/tmp/virtnet.test && mkdir -p %s/tmp/work", guestTestBin, h, h)
		w("echo %s hostroot \"$(up)\"", shQuote(marker))
		w("export HOME=/root TMPDIR=/tmp PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin %s=1 %s=1", EnvInVM, EnvHostRoot)
		for _, kv := range env {
			w("export %s=%s", kv[0], shQuote(kv[1]))
		}
		w("chroot %s /bin/sh -c 'cd /tmp/work && exec /tmp/virtnet.test \"$@\"' virtnet.test %s </dev/null 2>&1", h, strings.Join(q, " "))
	} else {
		w("mkdir -p /tmp/work && cd /tmp/work")
		w("export HOME=/root TMPDIR=/tmp LD_LIBRARY_PATH=%s %s=1", guestLibDir, EnvInVM)
		for _, kv := range env {
			w("export %s=%s", kv[0], shQuote(kv[1]))
		}
		w("%s %s </dev/null 2>&1", guestTestBin, strings.Join(q, " "))
	}
	w("rc=$?")
	w("echo %s exit \"$rc\" \"$(up)\"", shQuote(marker))
	w("sync")
	w("reboot -f")
	return b.String()
}
