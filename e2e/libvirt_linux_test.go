package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/testrig/testutil/libvirtd"
)

// qemuConf is <root>/etc/qemu.conf for virt-qemu-run: console output
// straight to files (there is no virtlogd), QEMU as root (the test's files
// live in root's 0700 temporary directories) and no security driver.
const qemuConf = `stdio_handler = "file"
user = "root"
group = "root"
security_driver = "none"
`

// virtQemuRun is a running virt-qemu-run.
type virtQemuRun struct {
	cmd  *exec.Cmd
	root string
	out  *bytes.Buffer
	done chan error
}

// startVirtQemuRun writes qemu.conf under root and starts virt-qemu-run on
// domainXML inside the network namespace at netnsPath: the process is
// started from a thread that entered the namespace (nsexec.Do), so it, the
// QEMU it starts and the tap it opens are there. Cleanup kills it and its
// QEMU.
func startVirtQemuRun(t *testing.T, root, domainXML, netnsPath string) *virtQemuRun {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "etc", "qemu.conf"), []byte(qemuConf), 0o644))
	seedCaps(t, root)
	v := &virtQemuRun{root: root, out: &bytes.Buffer{}, done: make(chan error, 1)}
	v.cmd = exec.Command("virt-qemu-run", "--root", root, "--verbose", domainXML)
	v.cmd.Stdout, v.cmd.Stderr = v.out, v.out
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, nsexec.Do(netnsPath, v.cmd.Start), "start virt-qemu-run in %s", netnsPath)
	go func() { v.done <- v.cmd.Wait() }()
	t.Cleanup(func() { v.stop(t) })
	return v
}

// stop ends virt-qemu-run and the QEMU it started. virt-qemu-run does not
// end by itself when the guest stops; SIGTERM makes it shut the domain
// down and exit. Whatever QEMU is left (its pid file under root) is
// killed.
func (v *virtQemuRun) stop(t *testing.T) {
	qemuPIDs := v.qemuPIDs()
	for _, pid := range qemuPIDs {
		if cpu, _, err := processCPU(pid); err == nil {
			t.Logf("guest QEMU (pid %d) CPU time: %s", pid, cpu.Round(10*time.Millisecond))
		}
	}
	if self, children, err := processCPU(v.cmd.Process.Pid); err == nil {
		t.Logf("virt-qemu-run CPU time: %s itself, %s in the children it reaped (QEMU capability probes)",
			self.Round(10*time.Millisecond), children.Round(10*time.Millisecond))
	}
	_ = v.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-v.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-v.cmd.Process.Pid, syscall.SIGKILL)
		<-v.done
	}
	for _, pid := range qemuPIDs {
		if syscall.Kill(pid, 0) == nil {
			t.Logf("killing QEMU %d left by virt-qemu-run", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if t.Failed() {
		t.Logf("virt-qemu-run output:\n%s", v.out.String())
	}
}

// qemuPIDs reads the pid files libvirt keeps under root.
func (v *virtQemuRun) qemuPIDs() []int {
	var pids []int
	files, _ := filepath.Glob(filepath.Join(v.root, "run", "qemu", "*.pid"))
	for _, f := range files {
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

// exited reports virt-qemu-run's end, if it ended.
func (v *virtQemuRun) exited() (error, bool) {
	if v == nil { // a relayed guest: the host runs it
		return nil, false
	}
	select {
	case err := <-v.done:
		v.done <- err
		return err, true
	default:
		return nil, false
	}
}

// console follows the guest's serial console file.
type console struct {
	path  string
	lines []string
	seen  int // bytes consumed
	part  string
}

var markerRE = regexp.MustCompile(marker + ` (\S+)(.*)$`)

// poll reads what was appended to the console file.
func (c *console) poll() error {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || len(b) <= c.seen {
		return err
	}
	s := c.part + string(b[c.seen:])
	c.seen = len(b)
	sc := bufio.NewScanner(strings.NewReader(s))
	c.part = ""
	for sc.Scan() {
		c.lines = append(c.lines, strings.TrimRight(sc.Text(), "\r"))
	}
	if !strings.HasSuffix(s, "\n") && len(c.lines) > 0 {
		c.part = c.lines[len(c.lines)-1]
		c.lines = c.lines[:len(c.lines)-1]
	}
	return nil
}

// report is the first "VIRTNET-E2E <what> …" line with that what, without
// the marker.
func (c *console) report(what string) (string, bool) {
	for _, l := range c.lines {
		if m := markerRE.FindStringSubmatch(l); m != nil && m[1] == what {
			return strings.TrimSpace(m[1] + m[2]), true
		}
	}
	return "", false
}

// waitFor polls until the guest reported one of whats (the first found is
// returned) or the budget is spent, virt-qemu-run ended or ctx ended.
func (c *console) waitFor(ctx context.Context, v *virtQemuRun, whats ...string) (string, error) {
	// The console is a small file; reading it every 50 ms costs nothing
	// next to the guest, and a report is seen within 50 ms.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.poll(); err != nil {
			return "", err
		}
		for _, w := range whats {
			if l, ok := c.report(w); ok {
				return l, nil
			}
		}
		if err, ok := v.exited(); ok {
			return "", fmt.Errorf("virt-qemu-run exited (%v) before the guest reported %v", err, whats)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("guest did not report %v: %w", whats, ctx.Err())
		case <-tick.C:
		}
	}
}

// capsCacheDir keeps libvirt's QEMU capabilities between guest tests:
// each test has a fresh libvirt root, and probing QEMU's capabilities
// costs libvirt seconds of CPU here and more than a minute nested in the
// kernel VM. libvirt checks a cached entry itself (QEMU binary's ctime,
// libvirt version, host CPU) and probes again when it does not match, so
// a stale copy costs only the probe. The kernel VM's entries (another
// CPU, another kernel) live apart from the host's: the VM's test shares
// that directory read-write (kernelvm.Options.CacheDir).
func capsCacheDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/root"
	}
	dir := filepath.Join(home, ".cache", "virtnet", "libvirt-caps")
	if os.Getenv("VIRTNET_IN_KERNELVM") == "1" {
		dir += "-kernelvm"
	}
	return dir
}

// kernelVMCapsCacheDir is capsCacheDir as seen from inside the kernel VM.
func kernelVMCapsCacheDir() string {
	if os.Getenv("VIRTNET_IN_KERNELVM") == "1" {
		return capsCacheDir()
	}
	return capsCacheDir() + "-kernelvm"
}

// capsSubdir is where virt-qemu-run --root keeps the capabilities cache.
const capsSubdir = "cache/qemu/capabilities"

// seedCaps copies the cached capabilities into a new libvirt root.
func seedCaps(t *testing.T, root string) {
	t.Helper()
	n, err := libvirtd.CopyXMLFiles(capsCacheDir(), filepath.Join(root, capsSubdir))
	if err != nil {
		t.Logf("libvirt capabilities cache not seeded: %v", err)
		return
	}
	t.Logf("libvirt capabilities cache: %d entries seeded from %s", n, capsCacheDir())
}

// saveCaps keeps the root's capabilities for the next test (once QEMU
// started, libvirt has written them).
func (v *virtQemuRun) saveCaps(t *testing.T) {
	t.Helper()
	if v == nil {
		return
	}
	if _, err := libvirtd.CopyXMLFiles(filepath.Join(v.root, capsSubdir), capsCacheDir()); err != nil {
		t.Logf("libvirt capabilities cache not saved: %v", err)
	}
}

// processCPU is the user+system CPU time of a running process and of
// the children it waited for, from /proc/<pid>/stat (in clock ticks of
// 1/100 s, Linux's USER_HZ).
func processCPU(pid int) (self, children time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; fields after its ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14-17
	for j := range ticks {
		if ticks[j], err = strconv.ParseInt(f[11+j], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat field %d: %w", pid, 14+j, err)
		}
	}
	tick := 10 * time.Millisecond
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick, nil
}
