package bridge

import (
	"context"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/tapnic"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// ManagedTapName is the plugin name [ManagedTap] is registered under:
// a VMI interface with binding: {name: managed-tap}.
const ManagedTapName = "managed-tap"

// ManagedTap is KubeVirt 1.x's managedTap domain attachment (a binding
// plugin registered with domainAttachmentType: managedTap, v1.4 and
// later): phase1 builds what the bridge binding builds (bridge, tap and,
// with IPAM, the dummy keeping the pod's addresses), and the VM's NIC is
// rendered on the tap as KubeVirt renders it, <interface type='ethernet'>
// with <target dev=tap managed='no'>, whatever
// binding.RenderOptions.InterfaceType says. Unlike the bridge binding it
// serves no DHCP (it does not implement [binding.DHCPServer]): the guest
// configures its address itself. Its zero value is ready to use.
type ManagedTap struct{}

// Method is [ManagedTapName].
func (ManagedTap) Method() string { return ManagedTapName }

// NeedsRecord is true: the tap and the MAC come from the record.
func (ManagedTap) NeedsRecord() bool { return true }

// Discover is the bridge binding's.
func (ManagedTap) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return Binding{}.Discover(ctx, d, in)
}

// Plan is the bridge binding's, recorded under [ManagedTapName].
func (ManagedTap) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	return Binding{}.Plan(in, link)
}

// Prepare is the bridge binding's.
func (ManagedTap) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return Binding{}.Prepare(ctx, d, in, link, rec)
}

// Cleanup is the bridge binding's.
func (ManagedTap) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	return Binding{}.Cleanup(ctx, d, in, link, rec)
}

// Render adds the VM's NIC on phase1's tap (type='ethernet').
func (ManagedTap) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	in.Options.InterfaceType = binding.InterfaceEthernet
	return tapnic.Render(in, dom)
}
