// Package prestart is virt-launcher's preStartHook: what must be on disk and
// running before libvirt may start the domain of a VMI. It is a launcher's
// one path from phase1's cache to the domain: api.Load the VMI, let the
// privileged agent run phase1.Run in the pod's namespace, then call one
// function, [Hook.Run], with the VMI, the phase1 cache and the domain's
// directories ([Hook.Dirs]). It builds the domain (domxml.Build), renders
// its interfaces, starts the DHCP servers their bindings ask for and writes
// the images; [Running.Domain] is the domain to marshal and define. The
// options a launcher has are the hook's fields ([Hook.NetNS],
// [Hook.InterfaceType], [Hook.Env], …), and the context given to Run must
// live as long as the VM: the DHCP servers stop when it is canceled.
//
// phase2.Domain renders the same XML without the rest: it is a dry run,
// with no DHCP server and no image, for tools that only print the domain.
//
// # Steps
//
// [Steps] lists the steps in the order they run (KubeVirt v0.53's
// preStartHook order, KUBEVIRT_V053.md §6, reduced to what virtnet renders):
//
//  1. [Storage] ("storage"): the sources of the domain's disks. Volumes
//     the kubelet provides (persistentVolumeClaim, dataVolume, hostDisk,
//     the raw image under a containerDisk) must exist and be readable; a
//     containerDisk gets its qcow2 overlay (`qemu-img create -f qcow2 -F raw
//     -b <image> <overlay>`, as KubeVirt); an emptyDisk is created as a
//     sparse raw file of its capacity and its disk's driver type is set to
//     raw (see below); a hostDisk of type DiskOrCreate likewise.
//  2. [Network] ("network"): the interfaces, through phase2.Items and
//     phase2.Render (a device the domain has already, with the alias its
//     binding gives it, binding.DeviceAlias, is replaced in place), then
//     one DHCP server (phase2/dhcp, started by phase2.DHCPServers) per
//     interface whose binding asks for one (binding.DHCPServer: bridge
//     and masquerade) and whose record has IPAM, each in its own
//     goroutine. The step
//     ends once every server has bound its DHCPv4/DHCPv6 sockets; a server
//     that cannot bind fails the step. Router advertisements are not
//     waited for: they start when the bridge gets its link-local address,
//     once QEMU opened the tap, and without CAP_NET_RAW they are off.
//  3. [CloudInit] ("cloud-init"): the NoCloud ("cidata") or ConfigDrive
//     ("config-2") image of each cloud-init volume and the "unattendCD"
//     image of each sysprep volume (from its mounted config map or secret),
//     at the path the domain's disk names (domxml.ISOPath), written by
//     cloudinit.Builder, the one writer of these images. For a ConfigDrive,
//     tagged interfaces first get a guest PCI address (domxml.PinTagged),
//     which the device metadata then lists (cloudinit.DevicesMetadata).
//  4. [DiskModes] ("disk-modes"): with every source in place, each disk's
//     cache and I/O modes from its file system (domxml.SetDriverModes):
//     cache none with O_DIRECT, else writethrough; io native for block
//     devices and preallocated raw files.
//
// Each step is a small named type ([Step]: Name and Run on a shared
// [*State]); [Hook.Steps] replaces the list (tests record or inject
// failures through it).
//
// # Failure
//
// The first failing step ends the run with a [*StepError] naming it; no
// later step runs. The run is all or nothing: every file and directory it
// created (images, overlays, emptyDisk files; never one that existed
// before) is removed, the DHCP servers it started are stopped, and the
// domain is restored to what the caller passed. Images are written to a
// staging name and renamed, so a failing step leaves no partial file
// either. Running the hook again after a failure starts from scratch;
// running it again after a success keeps the files it finds (emptyDisk
// content, overlays) and rewrites the cloud-init and sysprep images.
//
// # Differences from KubeVirt v0.53
//
//   - emptyDisk images are sparse raw files, not qcow2 (KubeVirt runs
//     qemu-img): creating them needs no external program and a sparse
//     file costs no more space. The storage step switches the disk's
//     <driver type> from domxml's qcow2 to raw accordingly.
//   - Order: KubeVirt v0.53 stores the cloud-init data in its preStartHook
//     and writes the ConfigDrive image after defining the domain, reading
//     the PCI addresses libvirt gave the tagged devices. Here the image is
//     written in the hook, before define: the hook pins the tagged devices'
//     addresses itself (slot 0 of a root port of their own), so the
//     metadata names the address the guest will see and the domain the
//     caller defines is complete. The disk modes come last, as in KubeVirt.
//   - DHCP servers are part of the hook (KubeVirt starts them inside
//     SetupPodNetworkPhase2).
//
// Everything here is phase2: no kernel changes, only files under the
// configured directories, and sockets inside the pod's namespace (port 67
// needs CAP_NET_BIND_SERVICE, as for package dhcp).
package prestart
