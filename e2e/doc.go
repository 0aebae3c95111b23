// Package e2e holds the end-to-end test: a real guest, booted by real
// libvirt (virt-qemu-run, the embedded QEMU driver, no daemon) under TCG,
// in a pod-like network namespace that phase1 prepared, with the domain,
// the DHCP server and the cloud-init image from phase2 and the
// preStartHook (package phase2/prestart). The guest is a Debian kernel with
// a busybox initramfs the test builds; it reports what it saw on its
// serial console, which the test reads.
//
// It needs root, qemu-system-x86_64, virt-qemu-run (Debian package
// libvirt-daemon-driver-qemu) with a libvirt-qemu system user, and the
// kernel VM assets of scripts/kernelvm-assets.sh (VIRTNET_KERNELVM_DIR);
// without them it skips, naming what is missing (a failure under
// VIRTNET_REQUIRE_KERNEL=1). The package has no API.
package e2e
