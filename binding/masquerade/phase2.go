package masquerade

// Phase 2 of the masquerade binding: the VM's NIC on the in-pod bridge
// k6t-<pod> that holds the VM network's gateway (10.0.2.1), with the MAC
// phase1 recorded and the pod link's MTU. Unlike KubeVirt v0.53, which
// writes <mac> only when the VMI sets macAddress and otherwise lets
// libvirt pick one, phase1 always records a MAC (see internal/names), so
// the domain, the DHCP server and a re-run all agree on it.
//
// The forms are the bridge binding's (binding.RenderOptions.InterfaceType):
// type='bridge' with <source bridge> by default, type='ethernet' with
// <target dev=tap managed='no'> for an unprivileged libvirt; see
// tapnic.Interface. NAT and port forwarding are phase1's nftables rules:
// nothing of them appears in the domain.

import (
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/tapnic"
)

// Render adds the interface's device to the domain.
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	return tapnic.Render(in, dom)
}
