// Package kernelvm runs a test inside a throwaway QEMU VM when the running
// kernel lacks a link type the test needs (dummy, macvlan, macvtap, vlan,
// …), so that such tests run, and count, on machines whose kernel was
// built without those modules.
//
// # Use
//
//	func TestSomething(t *testing.T) {
//		if kernelvm.Delegate(t, "dummy", "macvtap") {
//			return // ran (and passed, failed or skipped) inside the VM
//		}
//		// the test proper: here if this kernel can, else inside the VM
//	}
//
// [Delegate] returns false, and the test goes on in this process, when the
// environment marker VIRTNET_IN_KERNELVM=1 says we are inside the VM, or
// when this kernel can create every needed link type. It finds that out by
// creating one of each in a new network namespace on a locked OS thread
// that is discarded afterwards ([Supported]); the host's namespaces are
// never touched. Otherwise it boots a VM, runs this same test binary inside
// it with -test.run '^TestSomething$' (one anchored, quoted pattern per
// subtest level of t.Name()) and -test.v, streams the guest's console to
// t.Log line by line, and makes the in-VM outcome the outer test's: a
// non-zero exit status fails t, a SKIP skips it, and a run that did not
// run the test at all fails it. A VM that does not finish within the
// timeout is killed and fails t. [DelegateWith] takes [Options]: extra
// guest modules, environment variables to pass in, timeout, memory, extra
// QEMU arguments.
//
// Without root, QEMU or the assets, Delegate calls testutil.Skip naming
// exactly what is missing, which is a failure under
// VIRTNET_REQUIRE_KERNEL=1. [Available] reports the same without a test.
//
// Build tests with CGO_ENABLED=0 where possible: a static test binary is
// copied into the initramfs as it is. A dynamically linked one (cgo, or
// go test -race) also works: its loader goes into the initramfs at the
// path the binary names and its DT_NEEDED libraries (host copies, found in
// the multiarch directories) into /lib/virtnet, with LD_LIBRARY_PATH
// pointing there; when one cannot be found the test fails with
// [ErrDynamicBinary]. A -race binary is larger and slower under TCG.
// A TestMain runs inside the VM too, before the delegated test.
//
// # The VM
//
// Assets come from scripts/kernelvm-assets.sh [DIR] (Debian 12: it
// downloads linux-image-amd64's versioned image package with apt-get
// download, unpacks the kernel and the network modules, decompresses
// modules to plain .ko for busybox insmod, resolves their dependencies
// into a flat modules.dep, extracts the uncompressed vmlinux, and copies
// the static busybox). Each boot builds an uncompressed newc cpio
// initramfs in t.TempDir(): busybox, the modules of the needs (and their
// dependencies) in load order, the test binary as /virtnet.test, and an
// /init script that mounts proc, sys, devtmpfs, devpts and tmpfs on /tmp
// and /run, brings lo up, loads the modules with insmod, runs the test
// binary in /tmp/work with VIRTNET_IN_KERNELVM=1 and the passed-through
// environment (VIRTNET_REQUIRE_KERNEL always), prints a marker line with
// a per-boot random nonce and the exit status, and reboots, which ends
// QEMU (-no-reboot).
//
// QEMU runs with TCG (-accel tcg; KVM is not needed), -nodefaults, 1 GiB,
// the serial console on a pipe, and boots the ELF vmlinux through its PVH
// entry point, which skips the bzImage's self-decompression (about 3 s of
// CPU under TCG). The kernel command line turns off ACPI and the crypto
// self-tests (together about 4 s under TCG) and keeps the console quiet.
//
// The guest has no network devices, no disks and no host files besides the
// test binary: tests delegated to the VM must not read testdata/ files or
// anything else from the host (embed what they need), and must leave
// their results in the test output.
//
// # The host's root, read-only
//
// With [Options].HostRoot the VM also gets the host's root file system,
// shared read-only over virtio-9p (QEMU's -fsdev local,readonly=on; the
// guest modules 9p and 9pnet_virtio), and the init runs the test binary
// chrooted into it, with the guest's own proc, sys, dev and a tmpfs on
// /tmp and /run. The test then finds the host's programs and files at
// their paths: libvirt's virt-qemu-run and QEMU (which run nested, under
// TCG), the kernel VM assets, the CNI plugins the host built
// (testutil.CNIPluginDirEnv). Writes anywhere but /tmp and /run fail with
// EROFS, and the host's /proc, /sys and /dev are never seen (fresh mounts
// cover them). Inside, VIRTNET_KERNELVM_HOSTROOT=1 is set. The mount costs
// about 0.3 s of guest time.
//
// # Time
//
// Measured on this project's 2-core machine under TCG (Debian kernel 6.1,
// QEMU 7.2): about 2.5-3.2 s of QEMU CPU time per boot for the tests of
// this package (up to 5.5 s for tests that do more inside). On a quiet
// machine QEMU's start to the guest's init took 1.8-3.5 s of wall time
// (guest uptime at init 1.8-2.6 s), and a whole delegated test 2.8-4 s.
// Booting the bzImage with ACPI and the crypto self-tests cost about
// 6.6 s of CPU instead. The firmware is qboot where the machine has it
// ([Firmware]): 0.4 s from QEMU's start to the kernel against SeaBIOS's
// 0.8-1.1 s. Wall times grow with the host's load: with a load
// average of 10-20 from parallel builds the same boots took 12-30 s. Each
// boot logs its figures with t.Logf: initramfs size and build time, QEMU
// start → init running (with the guest's uptime), modules loaded, test
// done, total, and QEMU's CPU time.
//
// # Environment
//
//   - VIRTNET_KERNELVM_DIR: the asset directory (default
//     $HOME/.cache/virtnet/kernelvm), as for the script.
//   - VIRTNET_KERNELVM_TIMEOUT: the VM's time limit, a Go duration
//     (default 5m; also cut to the test's own deadline).
//   - VIRTNET_KERNELVM_QEMU: the QEMU binary (default qemu-system-x86_64).
//   - VIRTNET_KERNELVM_FORCE=1: delegate even when this kernel supports
//     every need (to test the runner on any kernel); for the script, rebuild
//     the asset directory.
//   - VIRTNET_IN_KERNELVM=1: set inside the VM; Delegate returns false.
//   - VIRTNET_REQUIRE_KERNEL=1: skips become failures, outside and inside.
//
// A test rig: importable so that every package's tests can use it, outside
// the compatibility promise (testrig/apicompat leaves testrig/ out), never
// imported by product code (testrig/layers).
package kernelvm
