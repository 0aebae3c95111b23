package bridge

// Phase 2 of the bridge binding: the VM's NIC on the in-pod bridge
// k6t-<pod> that phase1 made, with the pod link's MAC (or the VMI's
// macAddress) and MTU from the interface record, in one of the two forms
// binding.RenderOptions.InterfaceType chooses: type='bridge' (the
// default, the source document's form; libvirt creates the tap, which
// needs CAP_NET_ADMIN in the pod) or type='ethernet' (KubeVirt v0.53's
// form; libvirt only opens phase1's tap, so an unprivileged
// virt-launcher works). See tapnic.Interface for the elements.

import (
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/tapnic"
)

// Render adds the interface's device to the domain.
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	return tapnic.Render(in, dom)
}
