//go:build linux

package kernelvm

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// Defaults for [Options].
const (
	DefaultTimeout   = 5 * time.Minute
	DefaultMemoryMiB = 1024
)

// Options tune [DelegateWith]. The zero value of each field means its
// default.
type Options struct {
	// Needs are the link types the test needs: dummy, bridge, veth, tun,
	// macvlan, macvtap, vlan. The test is delegated when this kernel cannot
	// create one of them; their modules are loaded in the guest.
	Needs []string
	// Modules are extra guest modules to load (names as in the asset
	// directory's modules.dep, e.g. "nft_masq"), with their dependencies.
	Modules []string
	// Env names host environment variables to pass into the VM (set ones
	// only). VIRTNET_REQUIRE_KERNEL is always passed.
	Env []string
	// SetEnv are variables set in the VM, by name, after those of Env: a
	// value the host side computed (a built program's path, say) without
	// t.Setenv, which a parallel test cannot call.
	SetEnv map[string]string
	// Timeout bounds the VM's whole life; default [DefaultTimeout] or
	// $VIRTNET_KERNELVM_TIMEOUT, cut to the test's deadline.
	Timeout time.Duration
	// MemoryMiB is the guest's memory; default [DefaultMemoryMiB].
	MemoryMiB int
	// QEMUArgs are appended to QEMU's command line, e.g. a -drive and a
	// -device for a disk (load its modules with Modules).
	QEMUArgs []string
	// Files are host files to copy into the guest, by guest path
	// (absolute, e.g. "/opt/cni/bin/ptp" → a plugin built for the test);
	// they are executable there. Parent directories are made.
	Files map[string]string
	// Always delegates whatever this kernel supports: for tests that
	// need a kernel feature other than a link type (a file system, say),
	// which the caller has probed itself.
	Always bool
	// HostRoot shares the host's root file system read-only with the
	// guest over 9p (virtio-9p, the guest modules 9p and 9pnet_virtio) and
	// runs the test binary chrooted into it, with fresh proc, sys, dev and
	// a tmpfs on /tmp and /run: the test finds the host's programs
	// (libvirt, QEMU, …) and files (the assets, built plugins) at their
	// usual paths and can write only to /tmp and /run. The test sees
	// $VIRTNET_KERNELVM_HOSTROOT=1 there.
	HostRoot bool
	// CacheDir, with HostRoot, is a host directory (made if missing)
	// shared read-write at the same path: where a test keeps what it wants
	// to find again in the next VM (libvirt's capabilities cache, say).
	CacheDir string
	// CPUs is the guest's number of virtual CPUs (QEMU runs one TCG
	// thread each); default 1.
	CPUs int
	// NetNS is the path of a network namespace QEMU starts in (where a
	// -netdev tap of QEMUArgs opens its tap); "" for the test's own.
	NetNS string
}

// Delegate runs the calling test inside a throwaway VM when this kernel
// cannot create one of the link types in needs; see [DelegateWith].
//
//	func TestMacvtap(t *testing.T) {
//		if kernelvm.Delegate(t, "dummy", "macvtap") {
//			return
//		}
//		// runs here, or inside the VM
//	}
func Delegate(t *testing.T, needs ...string) bool {
	t.Helper()
	return DelegateWith(t, Options{Needs: needs})
}

// DelegateWith returns false when the test should go on in this process:
// inside the VM, or when this kernel supports every need (and
// VIRTNET_KERNELVM_FORCE is not 1). Otherwise it boots a VM, runs this test
// (and only it) from this test binary inside it, streams the output to
// t.Log, fails t if the test failed inside or the VM timed out, skips t if
// it skipped inside, and returns true. When the runner is unavailable
// (no root, qemu or assets) it calls testutil.Skip, which fails under
// VIRTNET_REQUIRE_KERNEL=1.
func DelegateWith(t *testing.T, opts Options) bool {
	t.Helper()
	if os.Getenv(EnvInVM) == "1" {
		return false
	}
	extra := opts.Modules
	if opts.HostRoot {
		extra = append(append([]string(nil), extra...), hostRootModules()...)
	}
	mods, err := modulesFor(opts.Needs, extra)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		testutil.Skip(t, "root privileges (to probe link types "+strings.Join(opts.Needs, ", ")+" and to run the test in a kernel VM)")
		return true
	}
	if os.Getenv(EnvForce) != "1" && !opts.Always {
		err := Supported(opts.Needs...)
		if err == nil {
			return false
		}
		if !isProbeError(err) {
			t.Fatalf("kernelvm: cannot tell whether this kernel supports %v: %v", opts.Needs, err)
		}
		t.Logf("kernelvm: delegating to a VM: %v", err)
	}
	if testing.Short() {
		// -short is the unit tests: a kernel VM boot is minutes.
		t.Skip("kernelvm: -short: the test needs a kernel VM boot")
		return true
	}
	qemu, err := qemuPath()
	if err != nil {
		testutil.Skip(t, err.Error())
		return true
	}
	if opts.CacheDir != "" {
		if !opts.HostRoot || !filepath.IsAbs(opts.CacheDir) {
			t.Fatalf("kernelvm: Options.CacheDir %q: needs HostRoot and an absolute path", opts.CacheDir)
		}
		if err := os.MkdirAll(opts.CacheDir, 0o755); err != nil {
			t.Fatalf("kernelvm: Options.CacheDir: %v", err)
		}
	}
	a, err := loadAssets(assetDir())
	if err != nil {
		testutil.Skip(t, err.Error())
		return true
	}
	order, err := loadOrder(a.deps, a.dir, mods)
	if err != nil {
		testutil.Skip(t, err.Error())
		return true
	}
	bin, err := os.Executable()
	if err != nil {
		bin = os.Args[0]
	}
	var libs []sharedObj
	if !opts.HostRoot { // chrooted into the host's root, it finds its own
		if libs, err = dynamicDeps(bin); err != nil {
			t.Fatal(err)
		}
	}
	for _, guest := range slices.Sorted(maps.Keys(opts.Files)) {
		if !filepath.IsAbs(guest) || filepath.Clean(guest) != guest || guest == guestTestBin || guest == "/init" {
			t.Fatalf("kernelvm: Files: guest path %q must be absolute and clean, not /init or the test binary", guest)
		}
		libs = append(libs, sharedObj{guest: strings.TrimPrefix(guest, "/"), host: opts.Files[guest]})
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
		if s := os.Getenv(EnvTimeout); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				t.Fatalf("kernelvm: %s=%q: want a positive Go duration such as 5m", EnvTimeout, s)
			}
			timeout = d
		}
	}
	if dl, ok := t.Deadline(); ok {
		// Leave the outer test time to report.
		if left := time.Until(dl) - 10*time.Second; left < timeout {
			timeout = max(left, time.Second)
		}
	}
	mem := opts.MemoryMiB
	if mem == 0 {
		mem = DefaultMemoryMiB
	}
	env := [][2]string{}
	for _, name := range append([]string{EnvRequireKernel}, opts.Env...) {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, [2]string{name, v})
		}
	}
	set, err := setEnvPairs(opts.SetEnv)
	if err != nil {
		t.Fatalf("kernelvm: %v", err)
	}
	env = append(env, set...)
	r := &run{
		name:     t.Name(),
		qemu:     qemu,
		assets:   a,
		modules:  order,
		testBin:  bin,
		libs:     libs,
		args:     testArgs(t.Name(), timeout),
		env:      env,
		timeout:  timeout,
		mem:      mem,
		qemuArgs: opts.QEMUArgs,
		hostRoot: opts.HostRoot,
		cacheDir: opts.CacheDir,
		cpus:     max(opts.CPUs, 1),
		netns:    opts.NetNS,
		tmp:      t.TempDir(),
		log:      func(line string) { t.Helper(); t.Log(line) },
		helper:   t.Helper,
	}
	res, err := r.do(context.Background())
	if res.stats != "" {
		t.Log(res.stats)
	}
	switch {
	case err != nil:
		t.Fatal(err)
	case res.exit != 0:
		t.Fatalf("kernelvm: %s failed inside the VM (exit status %d; its output is above)", t.Name(), res.exit)
	case res.verdict == "SKIP":
		t.Skipf("kernelvm: %s skipped inside the VM (reason above)", t.Name())
	case res.verdict != "PASS":
		t.Fatalf("kernelvm: the VM ran no test named %s (pattern %q)", t.Name(), runPattern(t.Name()))
	}
	return true
}

// envName is what a shell takes as a variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// setEnvPairs returns Options.SetEnv's variables sorted by name, or an
// error naming the first that is no shell variable name (the init script
// exports each; the value is quoted there, the name cannot be).
func setEnvPairs(set map[string]string) ([][2]string, error) {
	var pairs [][2]string
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("Options.SetEnv: %q is not a variable name", name)
		}
		pairs = append(pairs, [2]string{name, set[name]})
	}
	return pairs, nil
}

// runPattern returns the -test.run pattern that selects exactly the test
// named name (as t.Name() spells it), level by level.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// testArgs returns the arguments for the test binary inside the VM.
func testArgs(name string, timeout time.Duration) []string {
	// The inner timeout leaves time for the boot, so that a hung test
	// panics with its goroutines' stacks before the VM is killed.
	inner := max(timeout-30*time.Second, timeout/2).Round(time.Second)
	args := []string{"-test.run", runPattern(name), "-test.v", "-test.count=1", "-test.timeout=" + inner.String()}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	return args
}

// run is one VM boot.
type run struct {
	name     string // t.Name()
	qemu     string
	assets   *assets
	modules  []string
	testBin  string
	libs     []sharedObj
	args     []string
	env      [][2]string
	timeout  time.Duration
	mem      int
	qemuArgs []string
	hostRoot bool
	cacheDir string
	cpus     int
	netns    string // the network namespace QEMU starts in, "" for ours
	tmp      string
	log      func(string)
	helper   func() // t.Helper, so that the log lines name the test's line
}

// result is what a boot found out.
type result struct {
	exit    int    // the test binary's exit status, -1 if unknown
	verdict string // PASS, FAIL or SKIP line for the test, "" if none
	stats   string // the boot-time figures
}

// do boots the VM and waits for it to finish.
func (r *run) do(ctx context.Context) (result, error) {
	if r.helper != nil {
		r.helper()
	}
	res := result{exit: -1}
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return res, fmt.Errorf("kernelvm: marker nonce: %w", err)
	}
	marker := "VIRTNET-KVM-" + hex.EncodeToString(nonce)
	start := time.Now()
	initrd := filepath.Join(r.tmp, "initramfs.cpio")
	size, err := writeInitramfs(initrd, initramfsSpec{
		busybox: r.assets.busybox,
		modDir:  filepath.Join(r.assets.dir, "modules"),
		modules: r.modules,
		testBin: r.testBin,
		libs:    r.libs,
		init:    initScript(marker, r.modules, r.env, r.args, r.hostRoot, r.cacheDir),
	})
	if err != nil {
		return res, err
	}
	built := time.Since(start)

	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := qemuArgs(r.assets.kernel, initrd, r.mem)
	args = append(args, "-smp", strconv.Itoa(r.cpus))
	if r.hostRoot {
		args = append(args, hostRootArgs(r.cacheDir)...)
	}
	cmd := exec.CommandContext(ctx, r.qemu, append(args, r.qemuArgs...)...)
	cmd.Stdin = nil
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	boot := time.Now()
	startQEMU := cmd.Start
	if r.netns != "" {
		startQEMU = func() error { return nsexec.Do(r.netns, cmd.Start) }
	}
	if err := startQEMU(); err != nil {
		return res, fmt.Errorf("kernelvm: starting %s: %w", r.qemu, err)
	}
	waitc := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		waitc <- err
	}()

	var tInit, tMods, tDone time.Duration
	var guestInit, guestMods, guestDone string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(line, marker+" "); ok {
			f := strings.Fields(rest)
			now := time.Since(boot)
			switch {
			case len(f) == 2 && f[0] == "init":
				tInit, guestInit = now, f[1]
			case len(f) == 2 && f[0] == "modules":
				tMods, guestMods = now, f[1]
			case len(f) == 2 && f[0] == "hostroot":
				r.log(fmt.Sprintf("vm: host root mounted %s after qemu start (guest uptime %ss)", since(now), f[1]))
			case len(f) == 3 && f[0] == "exit":
				tDone, guestDone = now, f[2]
				if n, err := strconv.Atoi(f[1]); err == nil {
					res.exit = n
				}
			default:
				r.log("vm: " + rest)
			}
			continue
		}
		if tDone != 0 && strings.HasSuffix(line, "] reboot: Restarting system") {
			continue // the init's own reboot, after the test
		}
		if v := verdict(line, r.name); v != "" {
			res.verdict = v
		}
		r.log("vm: " + line)
	}
	_ = pr.Close() // lets a writer still blocked in the pipe go on
	werr := <-waitc
	total := time.Since(start)
	var cpu time.Duration
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}

	res.stats = fmt.Sprintf("kernelvm: kernel %s (%s), %d modules, initramfs %.1f MiB built in %v; "+
		"qemu start → init running %s (guest uptime %ss), modules loaded %s (%ss), test done %s (%ss); total %v, qemu CPU time %v",
		r.assets.version, filepath.Base(r.assets.kernel), len(r.modules), float64(size)/(1<<20), built.Round(time.Millisecond),
		since(tInit), orDash(guestInit), since(tMods), orDash(guestMods), since(tDone), orDash(guestDone),
		total.Round(time.Millisecond), cpu.Round(time.Millisecond))
	if ctx.Err() != nil {
		return res, fmt.Errorf("kernelvm: VM timed out after %v (set %s or Options.Timeout)", r.timeout, EnvTimeout)
	}
	if res.exit < 0 {
		var ee *exec.ExitError
		if werr != nil && !errors.As(werr, &ee) {
			return res, fmt.Errorf("kernelvm: %s: %w", r.qemu, werr)
		}
		return res, fmt.Errorf("kernelvm: the VM stopped before the test binary reported an exit status (qemu: %v; see the output above)", werr)
	}
	return res, nil
}

// since formats a time since the boot, "-" for a point never reached.
func since(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// bootCmdline is the guest kernel's command line. Under TCG, ACPI's
// interpreter and the crypto self-tests cost seconds at boot, so both are
// off; without ACPI the init ends the VM with a reboot, which -no-reboot
// turns into QEMU exiting. quiet keeps the (slow, emulated) serial console
// for the test's output. init_on_alloc=0: Debian's build zeroes every
// page and slab object it hands out, a hardening that costs a test VM
// (and the guests nested in it) a memset per allocation under TCG.
// noreplace-smp: the kernel keeps its lock prefixes on one CPU instead of
// rewriting each one (and each module's) at boot.
const bootCmdline = "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init acpi=off cryptomgr.notests mitigations=off init_on_alloc=0 noreplace-smp"

// QbootROM is qboot, the minimal firmware Debian's qemu-system-data ships
// beside SeaBIOS. It brings a directly booted kernel up without SeaBIOS's
// device scan and boot menu. Measured under TCG on this project's
// two-core machine (time outside the guest kernel, QEMU's start to init
// less the kernel's uptime): SeaBIOS 0.8-1.1 s, qboot 0.4 s for a kernel
// VM; for a q35 guest with seven root ports nested in the kernel VM,
// SeaBIOS 21.6 s, qboot 13.5-14.7 s.
const QbootROM = "/usr/share/qemu/qboot.rom"

// Firmware returns the firmware a directly booted test VM takes: QbootROM
// when this machine has it, else "" (QEMU's default, SeaBIOS).
func Firmware() string {
	if st, err := os.Stat(QbootROM); err == nil && st.Mode().IsRegular() {
		return QbootROM
	}
	return ""
}

// qemuArgs returns QEMU's command line: TCG, no default devices, the serial
// console on stdio, exit instead of reboot, qboot as the firmware where
// there is one ([Firmware]).
func qemuArgs(kernel, initrd string, memMiB int) []string {
	var bios []string
	if fw := Firmware(); fw != "" {
		bios = []string{"-bios", fw}
	}
	return append(bios,
		"-accel", "tcg",
		"-nodefaults", "-no-user-config",
		"-display", "none",
		"-serial", "stdio",
		"-no-reboot",
		"-m", strconv.Itoa(memMiB),
		"-kernel", kernel,
		"-initrd", initrd,
		"-append", bootCmdline,
	)
}

// verdict returns PASS, FAIL or SKIP when line is go test -v's verdict line
// for the test called name, else "".
func verdict(line, name string) string {
	l := strings.TrimLeft(line, " ")
	for _, v := range []string{"PASS", "FAIL", "SKIP"} {
		if rest, ok := strings.CutPrefix(l, "--- "+v+": "+name+" "); ok && strings.HasPrefix(rest, "(") {
			return v
		}
	}
	return ""
}

// hostRootModules are the guest modules [Options].HostRoot needs.
func hostRootModules() []string { return []string{"virtio_pci", "9pnet_virtio", "9p"} }

// hostRootArgs shares the host's root read-only over virtio-9p. multidevs
// remaps inode numbers so that files of the host's other mounts cannot
// collide with the root's.
func hostRootArgs(cacheDir string) []string {
	args := []string{
		"-fsdev", "local,id=" + hostRootTag + ",path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=" + hostRootTag + ",mount_tag=" + hostRootTag,
	}
	if cacheDir != "" {
		args = append(args,
			"-fsdev", "local,id="+hostCacheTag+",path="+qemuOptEscape(cacheDir)+",security_model=none,multidevs=remap",
			"-device", "virtio-9p-pci,fsdev="+hostCacheTag+",mount_tag="+hostCacheTag)
	}
	return args
}

// qemuOptEscape doubles the commas of a QEMU option value.
func qemuOptEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }
