package bridge

// Phase 2 of the bridge binding: the VM's NIC on the in-pod bridge
// k6t-<pod> that phase1 made, with the pod link's MAC (or the VMI's
// macAddress) and MTU from the interface record.
//
// Two forms, chosen by binding.RenderOptions.InterfaceType:
//
//   - bridge (the default, the source document's form):
//     <interface type='bridge'><source bridge='k6t-eth0'/> and no <target>:
//     libvirt creates a tap vnetN and enslaves it. Use it when libvirt runs
//     with CAP_NET_ADMIN in the pod. phase1's tap0 is then an idle port.
//   - ethernet (KubeVirt v0.53's form): <interface type='ethernet'>
//     <target dev='tap0' managed='no'/>: libvirt only opens the tap phase1
//     made (owned by the qemu user), so an unprivileged virt-launcher works.
//
// Both get <mac>, <mtu>, <model> (virtio → virtio-non-transitional, as
// KubeVirt renders it), <alias name='ua-<interface>'>, the VMI's PCI
// address, <boot order> or <rom enabled='no'>, and <driver name='vhost'
// queues='N'> with multiqueue; see tapnic.Interface.

import (
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/tapnic"
)

// Render adds the interface's device to the domain.
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	return tapnic.Render(in, dom)
}
