package bridge

import (
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/tapnic"
)

// ManagedTapName is the plugin name [ManagedTap] is registered under:
// a VMI interface with binding: {name: managed-tap}.
const ManagedTapName = "managed-tap"

// ManagedTap is KubeVirt 1.x's managedTap domain attachment (a binding
// plugin registered with domainAttachmentType: managedTap, v1.4 and
// later): phase1 builds what the bridge binding builds (bridge, tap and,
// with IPAM, the dummy keeping the pod's addresses; the Discover, Plan,
// Prepare and Cleanup methods are the bridge binding's), and the VM's NIC is
// rendered on the tap as KubeVirt renders it, <interface type='ethernet'>
// with <target dev=tap managed='no'>, whatever
// binding.RenderOptions.InterfaceType says. Unlike the bridge binding it
// serves no DHCP (it does not implement [binding.DHCPServer]): the guest
// configures its address itself. Its zero value is ready to use.
type ManagedTap struct{ phase1 }

// Method is [ManagedTapName].
func (ManagedTap) Method() string { return ManagedTapName }

// Render adds the VM's NIC on phase1's tap (type='ethernet').
func (ManagedTap) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	in.Options.InterfaceType = binding.InterfaceEthernet
	return tapnic.Render(in, dom)
}
