// Command launcher does, in order, what a KubeVirt virt-launcher does with
// this library for one VMI in a pod's network namespace, and stops short
// of starting QEMU:
//
//  1. load and validate the VMI (-vmi FILE);
//  2. phase1.Run in the namespace (-netns NAME or path; needs root),
//     standing in for virt-handler, writing the cache under -dir;
//  3. the preStartHook (package phase2/prestart), one call: it builds the
//     domain (domxml.Build), readies the disk sources, renders the
//     interfaces, starts a DHCP server per interface whose binding asks for
//     one (bridge, masquerade) with its sockets inside the namespace
//     (Hook.NetNS), and writes the cloud-init and sysprep images;
//  4. write the domain XML (-o FILE, default stdout: the XML alone, so
//     that `launcher ... > domain.xml` is XML; progress and logs go to
//     stderr);
//  5. keep the DHCP servers running until SIGINT/SIGTERM (or exit at once
//     with -once); with -cleanup, undo phase1 on the way out.
//
// Example, with a namespace made by `ip netns add pod` and a veth eth0 in
// it holding an address and a default route:
//
//	launcher -netns pod -vmi api/testdata/kubevirt/vmi-masquerade.yaml -dir /tmp/vmi -o /tmp/vmi/domain.xml
//
// The directories under -dir are those of domxml.Options (private,
// ephemeral, container-disks, empty-disks) and cache/; the cloud-init
// secrets and sysprep volumes are read from secret/ and sysprep/ there.
// The domain's bridge and masquerade NICs follow the preStartHook's rule
// (prestart.ChooseInterfaceType), checked before phase1 runs: by default
// <interface type='bridge'> when this process holds CAP_NET_ADMIN (libvirt,
// with the same capabilities, can create its tap), else
// <interface type='ethernet'> on phase1's taps; -interface-type bridge
// without CAP_NET_ADMIN is refused, -interface-type ethernet always works.
// Run as another user than root it stops at once and says why root is
// needed.
package main
