// Package e2e holds the end-to-end tests: a real guest, booted by real
// libvirt (virt-qemu-run, the embedded QEMU driver, no daemon) under TCG,
// in a pod network namespace that phase1 prepared, with the domain, the
// DHCP server and the cloud-init image from phase2 and the preStartHook
// (package phase2/prestart). The guest is a Debian kernel with a busybox
// initramfs the test builds; it reports what it saw on its serial
// console, which the test reads, and serves two ports the test dials.
//
//   - TestGuestEndToEnd: masquerade on the hand-made pod, with a NoCloud
//     image (hostname, user-data).
//   - TestMasqueradeGuestCNI: masquerade on pods made by the CNI reference
//     plugins (flannel-like bridge, kindnet-like ptp, dual-stack) and the
//     hand-made Calico-like pod: lease 10.0.2.2 with the pod's MTU and DNS,
//     the node sees the pod IP as source, the node reaches the guest at the
//     pod IP on the declared port.
//   - TestBridgeGuestCNI: the bridge binding on CNI-made pods (flannel-like,
//     Calico-like /32 with option 121, kindnet-like ptp, also a /32 with
//     option 121, with a second pod; under -race the flannel-like one only).
//     The binding needs a dummy link; on a kernel without one the test runs
//     inside the kernel VM (testrig/kernelvm) with the host's root shared
//     read-only, where libvirt runs QEMU nested under TCG. The guest leases
//     the pod's own IP from our server; phase1 is re-run while it runs.
//     A nested guest costs about two minutes (QEMU to the guest's init
//     60-100 s, against 2 s unnested).
//   - TestLiveMigration, TestLiveMigrationBridge: a guest migrated live
//     between two pods, each with its own libvirtd (testutil/libvirtd),
//     masquerade unnested, the bridge binding on a secondary network in
//     the kernel VM (docs/migration.md).
//
// libvirt's QEMU capabilities are cached between tests (capsCacheDir), as
// each test has a fresh libvirt root. Each test logs its figures: time to
// the guest's init and lease, the guest QEMU's CPU time, virt-qemu-run's.
//
// It needs root, qemu-system-x86_64, virt-qemu-run (Debian package
// libvirt-daemon-driver-qemu) with a libvirt-qemu system user, the kernel
// VM assets of scripts/kernelvm-assets.sh (VIRTNET_KERNELVM_DIR) and the go
// command (to build the CNI plugins); without them it skips, naming what
// is missing (a failure under VIRTNET_REQUIRE_KERNEL=1). The package has
// no API.
package e2e
