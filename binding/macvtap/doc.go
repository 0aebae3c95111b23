// Package macvtap implements the macvtap binding method: the VM's NIC is
// a macvtap link that the macvtap CNI (kubevirt/macvtap-cni) created on a
// host NIC and moved into the pod's network namespace under the pod
// interface's name (net1, …). QEMU reads and writes the link's character
// device /dev/tap<ifindex>; no bridge, tap or DHCP server is involved.
//
// # Phase1 (privileged, in the pod netns)
//
//   - Discover reads the link named after the pod interface and requires
//     it to be a macvtap ([ErrWrongType] otherwise): name, ifindex, MAC,
//     MTU. It changes nothing.
//   - Plan records Target (the link's name), Ifindex, MTU and the VM's MAC:
//     the interface's macAddress when set, else the link's MAC.
//   - Prepare sets the link's MAC to the VM's MAC when they differ
//     (`ip link set net1 address MAC`), and does nothing otherwise.
//   - Cleanup gives the link back the MAC it was discovered with.
//
// # Phase2 (unprivileged)
//
// Render appends
//
//	<interface type='ethernet'>
//	  <mac address='…'/><target dev='net1' managed='no'/>
//	  <model type='virtio-non-transitional'/><mtu size='…'/>
//	  <alias name='ua-<name>'/> [<address type='pci' …/>] <boot order='N'/> | <rom enabled='no'/>
//	</interface>
//
// from the record: libvirt recognises the existing macvtap and opens its
// tap device itself, which an unprivileged libvirt can do once the device
// node is accessible.
//
// # KubeVirt v0.53
//
// KubeVirt has no phase1 work for macvtap beyond its pod-interface cache;
// its phase2 reads the link in the launcher (MAC = spec MAC or the link's,
// MTU = the link's) and renders the same <interface type='ethernet'>,
// with model, alias, PCI address, boot order or rom and multiqueue
// driver as for every interface. Its virt-controller copies the spec MAC
// into the Multus network-selection annotation, so the CNI creates the
// link with that MAC.
//
// # Deliberate differences
//
//   - Discovery happens in phase1 (phase2 must not touch the kernel here)
//     and is recorded in the cache; phase2 renders from the record.
//   - Discover checks the link's type: KubeVirt would attach whatever link
//     has the pod interface's name.
//   - Prepare makes the link's MAC match the VM's when they differ. With
//     KubeVirt's controller this never happens (the CNI already used the
//     spec MAC); without it (a launcher fed a VMI whose MAC did not reach
//     the CNI), a guest MAC that differs from the macvtap's would get no
//     unicast traffic, since macvtap delivers frames by the link's MAC.
//     Cleanup undoes it.
package macvtap
