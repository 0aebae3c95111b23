// Package libvirtd starts a private libvirt daemon for a test: Debian's
// libvirtd in session mode, as an unprivileged user (Debian's
// libvirt-qemu by default, the counterpart of KubeVirt's qemu user 107), every directory of it under one test directory, and
// optionally inside a network namespace the test made (a pod), so that
// the QEMU it starts opens the pod's taps. A running domain can then be
// changed the way a virt-launcher changes it: virsh attach-device,
// detach-device, update-device --live, and two daemons with distinct host
// UUIDs can migrate a domain between them.
//
// Why session mode: a root libvirtd has fixed paths (/run/libvirt,
// /etc/libvirt, /var/lib/libvirt) that two daemons, or a daemon and the
// machine's own, would share. The session daemon takes every path from
// HOME and the XDG variables. It is also what KubeVirt runs for a
// non-root virt-launcher: QEMU as uid 107, taps owned by 107 made by the
// privileged side.
//
// The daemon runs in its own mount namespace, where /dev/net/tun is
// openable by its uid, with stdio_handler "file" (no virtlogd is spawned), and
// exits when the test ends: [Daemon.Stop] destroys every domain, stops
// the daemon and kills any QEMU it left.
//
// A test rig: importable so that every package's tests can use it, outside
// the compatibility promise (testrig/apicompat leaves testrig/ out), never
// imported by product code (testrig/layers).
package libvirtd

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// DefaultUser is the user the daemon and its QEMU run as unless
// [Options.UID] says otherwise. libvirt needs a passwd entry for its
// uid; test.sh creates this one where the Debian packages did not.
const DefaultUser = "libvirt-qemu"

// DefaultUID is [DefaultUser]'s uid, or an error naming what is missing.
func DefaultUID() (int, error) {
	u, err := user.Lookup(DefaultUser)
	if err != nil {
		return 0, fmt.Errorf("user %s: %w", DefaultUser, err)
	}
	return strconv.Atoi(u.Uid)
}

// Options says how to start a daemon.
type Options struct {
	// NetNS is the path of the network namespace the daemon (and every
	// QEMU it starts) runs in; empty keeps the test's.
	NetNS string
	// UID runs the daemon and its QEMU as this uid and gid; zero means
	// [DefaultUser]'s. libvirt needs a passwd entry for it.
	UID int
	// HostUUID is the daemon's host UUID (libvirtd.conf host_uuid). Two
	// daemons that migrate a domain between them need distinct ones:
	// libvirt refuses a migration to "the same host". Empty leaves
	// libvirt's own (the machine's).
	HostUUID string
	// CapsCache is a directory of libvirt's QEMU capabilities kept
	// between tests: copied into the daemon's cache at start and back at
	// Stop. Probing QEMU costs seconds here and more than a minute nested
	// in the kernel VM; libvirt re-probes a stale entry by itself. Empty
	// disables it.
	CapsCache string
}

// Daemon is a running private libvirtd.
type Daemon struct {
	// Dir holds everything of the daemon and is owned by its uid: put the
	// files its domains read or write (kernel, initrd, console log) under
	// it, see [Daemon.Path].
	Dir string
	// URI connects to the daemon (virsh -c URI).
	URI string
	// UID is the uid of the daemon and its QEMU.
	UID int

	tb   testing.TB
	opts Options
	cmd  *exec.Cmd
	done chan error
	log  *syncBuffer
}

// Start starts a daemon for tb, waits until it answers and registers its
// [Daemon.Stop] as a cleanup. It skips (fails under
// VIRTNET_REQUIRE_KERNEL=1) without root, libvirtd, virsh or setpriv.
func Start(tb testing.TB, opts Options) *Daemon {
	tb.Helper()
	testutil.RequireRoot(tb)
	for _, tool := range []string{"libvirtd", "virsh", "setpriv", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Skip(tb, tool+" is not installed (Debian packages libvirt-daemon, libvirt-clients, util-linux)")
		}
	}
	if opts.UID == 0 {
		uid, err := DefaultUID()
		if err != nil {
			testutil.Skip(tb, err.Error()+" (test.sh creates it)")
		}
		opts.UID = uid
	}
	// Not t.TempDir: its 0700 parent keeps the daemon's uid out.
	dir, err := os.MkdirTemp("", "virtnet-libvirtd-")
	if err != nil {
		tb.Fatalf("libvirtd: %v", err)
	}
	d := &Daemon{Dir: dir, UID: opts.UID, tb: tb, opts: opts, done: make(chan error, 1), log: &syncBuffer{}}
	tb.Cleanup(func() {
		d.Stop()
		_ = os.RemoveAll(dir)
	})
	if err := d.layout(); err != nil {
		tb.Fatalf("libvirtd: prepare %s: %v", dir, err)
	}
	sock := filepath.Join(d.runtimeDir(), "libvirt", "libvirt-sock")
	d.URI = "qemu+unix:///session?socket=" + sock
	notify, err := d.listenNotify()
	if err != nil {
		tb.Fatalf("libvirtd: %v", err)
	}
	defer notify.Close()
	// The daemon's own mount namespace, where /dev/net/tun is a node that
	// its uid may open: Debian's udev makes it 0666, a container or the
	// kernel VM's devtmpfs leave it 0600. Opening it lets QEMU attach to
	// a tap its uid owns, nothing more (making a tap needs CAP_NET_ADMIN).
	d.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /dev/net/tun && exec "$@"`, d.tunNode(),
		"setpriv", "--reuid", strconv.Itoa(d.UID), "--regid", strconv.Itoa(d.UID),
		"--clear-groups", "--inh-caps=-all", "--", "libvirtd", "--timeout", "0")
	d.cmd.Env = append(d.env(), "NOTIFY_SOCKET="+d.notifySocket())
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := nsexec.Do(opts.NetNS, d.cmd.Start); err != nil {
		tb.Fatalf("libvirtd: start in %q: %v", opts.NetNS, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	started := time.Now()
	if err := d.waitReady(ctx, notify); err != nil {
		tb.Fatalf("libvirtd did not answer: %v\n%s", err, d.log.String())
	}
	tb.Logf("libvirtd: answering %.2fs after its start", time.Since(started).Seconds())
	return d
}

// DefaultCapsCache is where tests keep the session daemon's QEMU
// capabilities ([Options.CapsCache]): under the user's cache directory,
// apart for the kernel VM (another CPU, another kernel: the VM's tests
// share it read-write through kernelvm.Options.CacheDir).
func DefaultCapsCache() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/root"
	}
	dir := filepath.Join(home, ".cache", "virtnet", "libvirt-caps-session")
	if os.Getenv("VIRTNET_IN_KERNELVM") == "1" {
		dir += "-kernelvm"
	}
	return dir
}

// Path is name under the daemon's directory: a place for the files its
// domains use, readable and writable by its uid once created there
// ([Daemon.WriteFile]).
func (d *Daemon) Path(name string) string { return filepath.Join(d.Dir, "files", name) }

// WriteFile writes a file at [Daemon.Path](name), owned by the daemon's
// uid.
func (d *Daemon) WriteFile(name string, data []byte) string {
	d.tb.Helper()
	p := d.Path(name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		d.tb.Fatalf("libvirtd: %v", err)
	}
	if err := os.Chown(p, d.UID, d.UID); err != nil {
		d.tb.Fatalf("libvirtd: %v", err)
	}
	return p
}

// Virsh runs virsh against the daemon and returns its standard output;
// the error carries its standard error.
func (d *Daemon) Virsh(ctx context.Context, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "virsh", append([]string{"-q", "-c", d.URI}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("virsh %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Create starts a transient domain from domainXML (virsh create) and
// returns its name.
func (d *Daemon) Create(ctx context.Context, domainXML string) (string, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("domain XML: %w", err)
	}
	f := d.WriteFile(fmt.Sprintf("domain-%d.xml", time.Now().UnixNano()), []byte(domainXML))
	if _, err := d.Virsh(ctx, "create", f); err != nil {
		return "", err
	}
	return dom.Name, nil
}

// Device runs a device verb ("attach-device", "detach-device",
// "update-device") with deviceXML on the running domain dom (--live).
func (d *Daemon) Device(ctx context.Context, verb, dom, deviceXML string) error {
	f := d.WriteFile(fmt.Sprintf("device-%d.xml", time.Now().UnixNano()), []byte(deviceXML))
	_, err := d.Virsh(ctx, verb, dom, f, "--live")
	return err
}

// QEMUPIDs are the pids of the QEMU processes the daemon runs, from its
// pid files.
func (d *Daemon) QEMUPIDs() []int {
	var pids []int
	files, _ := filepath.Glob(filepath.Join(d.runtimeDir(), "libvirt", "qemu", "run", "*.pid"))
	for _, f := range files {
		if filepath.Base(f) == "driver.pid" { // the QEMU driver's own lock
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// syncBuffer is a buffer that the goroutine copying the daemon's output
// writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Log is what the daemon printed so far.
func (d *Daemon) Log() string { return d.log.String() }

// Stop destroys every running domain, saves the capabilities cache, stops
// the daemon and kills any QEMU left. It is safe to call more than once.
func (d *Daemon) Stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	if _, ended := d.exited(); !ended {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if out, err := d.Virsh(ctx, "list", "--name"); err == nil {
			for _, name := range strings.Fields(out) {
				if _, err := d.Virsh(ctx, "destroy", name); err != nil {
					d.tb.Logf("libvirtd: %v", err)
				}
			}
		}
		cancel()
	}
	qemu := d.QEMUPIDs()
	if d.opts.CapsCache != "" {
		if _, err := CopyXMLFiles(d.capsDir(), d.opts.CapsCache); err != nil {
			d.tb.Logf("libvirtd: capabilities cache not saved: %v", err)
		}
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	d.done <- nil // later calls see it ended
	for _, pid := range qemu {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	d.cmd.Process = nil
}

func (d *Daemon) exited() (error, bool) {
	select {
	case err := <-d.done:
		d.done <- err
		return err, true
	default:
		return nil, false
	}
}

func (d *Daemon) tunNode() string    { return filepath.Join(d.Dir, "tun") }
func (d *Daemon) home() string       { return filepath.Join(d.Dir, "home") }
func (d *Daemon) runtimeDir() string { return filepath.Join(d.Dir, "run") }
func (d *Daemon) configDir() string  { return filepath.Join(d.home(), ".config", "libvirt") }
func (d *Daemon) capsDir() string {
	return filepath.Join(d.home(), ".cache", "libvirt", "qemu", "capabilities")
}

func (d *Daemon) env() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + d.home(),
		"XDG_RUNTIME_DIR=" + d.runtimeDir(),
		"XDG_CONFIG_HOME=" + filepath.Join(d.home(), ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(d.home(), ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(d.home(), ".local", "share"),
	}
	return env
}

// layout writes the daemon's configuration and seeds its capabilities
// cache, everything owned by its uid.
func (d *Daemon) layout() error {
	if err := os.Chmod(d.Dir, 0o755); err != nil {
		return err
	}
	for _, sub := range []string{d.configDir(), d.runtimeDir(), d.capsDir(), filepath.Join(d.Dir, "files")} {
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(d.Dir, "files"), 0o755); err != nil {
		return err
	}
	if err := unix.Mknod(d.tunNode(), unix.S_IFCHR|0o666, int(unix.Mkdev(10, 200))); err != nil {
		return fmt.Errorf("a /dev/net/tun node for the daemon: %w", err)
	}
	if err := os.Chmod(d.tunNode(), 0o666); err != nil { // past the umask
		return err
	}
	conf := "# virtnet test daemon\n"
	if d.opts.HostUUID != "" {
		conf += fmt.Sprintf("host_uuid = %q\n", d.opts.HostUUID)
	}
	if err := os.WriteFile(filepath.Join(d.configDir(), "libvirtd.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	// Console and QEMU logs to files: no virtlogd to spawn and leave.
	if err := os.WriteFile(filepath.Join(d.configDir(), "qemu.conf"), []byte("stdio_handler = \"file\"\n"), 0o644); err != nil {
		return err
	}
	if d.opts.CapsCache != "" {
		if _, err := CopyXMLFiles(d.opts.CapsCache, d.capsDir()); err != nil {
			d.tb.Logf("libvirtd: capabilities cache not seeded: %v", err)
		}
	}
	return filepath.Walk(d.Dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == d.tunNode() {
			return nil
		}
		return os.Lchown(p, d.UID, d.UID)
	})
}

// notifySocket is where the daemon reports that it runs: systemd's
// notification protocol (sd_notify(3)), which libvirtd speaks when
// NOTIFY_SOCKET is set, as under systemd.
func (d *Daemon) notifySocket() string { return filepath.Join(d.Dir, "notify") }

// listenNotify binds the datagram socket of [Daemon.notifySocket], which
// the daemon's uid may write to.
func (d *Daemon) listenNotify() (*net.UnixConn, error) {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: d.notifySocket(), Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	if err := os.Chown(d.notifySocket(), d.UID, d.UID); err != nil {
		c.Close()
		return nil, fmt.Errorf("notify socket: %w", err)
	}
	return c, nil
}

// waitReady waits for the daemon's READY=1 on its notify socket (its event
// loop runs: libvirtd sends it as it starts to serve its sockets), then
// for one virsh call to connect, which the daemon answers once its drivers
// are initialised (until then it leaves connections in its sockets'
// backlog): no polling. It fails as soon as the daemon exits, or when ctx
// ends.
func (d *Daemon) waitReady(ctx context.Context, notify *net.UnixConn) error {
	ready := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := notify.Read(buf)
			if err != nil {
				ready <- err
				return
			}
			// One message, newline-separated assignments (sd_notify(3)).
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" {
					ready <- nil
					return
				}
			}
		}
	}()
	defer notify.Close() // ends the reader
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("reading %s: %w", d.notifySocket(), err)
		}
	case err := <-d.done:
		d.done <- err
		return fmt.Errorf("libvirtd exited: %v", err)
	case <-ctx.Done():
		return fmt.Errorf("no READY=1 from libvirtd on NOTIFY_SOCKET: %w", ctx.Err())
	}
	connected := make(chan error, 1)
	go func() {
		_, err := d.Virsh(ctx, "uri")
		connected <- err
	}()
	select {
	case err := <-connected:
		return err
	case err := <-d.done:
		d.done <- err
		return fmt.Errorf("libvirtd exited: %v", err)
	}
}

// CopyXMLFiles copies the *.xml files of src into dst (made if needed),
// each through a temporary file and a rename.
func CopyXMLFiles(src, dst string) (int, error) {
	files, err := filepath.Glob(filepath.Join(src, "*.xml"))
	if err != nil || len(files) == 0 {
		return 0, err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		tmp, err := os.CreateTemp(dst, ".caps-")
		if err != nil {
			return 0, err
		}
		_, werr := tmp.Write(b)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), filepath.Join(dst, filepath.Base(f)))
		}
		if werr != nil {
			_ = os.Remove(tmp.Name())
			return 0, werr
		}
	}
	return len(files), nil
}
