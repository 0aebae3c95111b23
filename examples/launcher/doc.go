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
// Example, as root in a clone of the repository, with a namespace made by
// `ip netns add pod` and a veth eth0 in it holding an address and a
// default route (a pod as a CNI plugin leaves it):
//
//	go run ./examples/launcher -netns pod -vmi examples/launcher/testdata/demo.yaml -dir /tmp/vmi -o /tmp/vmi/domain.xml
//
// It serves DHCP until Ctrl-C; add -once to stop after the hook and
// -cleanup to undo phase1 on the way out.
//
// The directories under -dir are those of domxml.Options (private,
// ephemeral, container-disks, empty-disks) and cache/; the cloud-init
// secrets and sysprep volumes are read from secret/ and sysprep/ there.
// The launcher writes the cloud-init images, the emptyDisk images and the
// containerDisk overlays itself; it reads the rest. A containerDisk needs
// its raw image at <dir>/container-disks/disk_<i>.img, i being the
// volume's index in spec.volumes (the image a containerDisk container
// serves), and a persistentVolumeClaim or dataVolume its disk at
// <dir>/private/vmi-disks/<volume>/disk.img; without them the hook stops
// and names the missing file. KubeVirt's own example VMI, whose
// containerDisk is volume 0:
//
//	mkdir -p /tmp/vmi2/container-disks && qemu-img create -f raw /tmp/vmi2/container-disks/disk_0.img 1G
//	go run ./examples/launcher -netns pod -vmi api/testdata/kubevirt/vmi-masquerade.yaml -dir /tmp/vmi2 -once -cleanup
//
// The domain's bridge and masquerade NICs follow the preStartHook's rule
// (prestart.ChooseInterfaceType), checked before phase1 runs: by default
// <interface type='bridge'> when this process holds CAP_NET_ADMIN (libvirt,
// with the same capabilities, can create its tap), else
// <interface type='ethernet'> on phase1's taps; -interface-type bridge
// without CAP_NET_ADMIN is refused, -interface-type ethernet always works.
// Run as another user than root it stops at once and says why root is
// needed.
package main
