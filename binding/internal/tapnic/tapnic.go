package tapnic

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
	"github.com/virtnet/virtnet/cache"
)

// Interface renders a VM NIC on the in-pod bridge and tap phase1 made
// (bridge and masquerade bindings): <mac address=rec.MAC>, <mtu
// size=rec.MTU> (omitted when 0), the model (virtio becomes
// virtio-non-transitional, as KubeVirt renders it), <alias
// name='ua-<interface>'>, the VMI's PCI address, <boot order> or <rom
// enabled='no'>, <driver name='vhost' queues='N'> with multiqueue (see
// package nicxml), and, by the interface type:
//
//   - [binding.InterfaceBridge] or "": <interface type='bridge'> with <source
//     bridge=rec.Bridge> and no <target>. libvirt then creates its own tap
//     (named vnetN) and enslaves it to the bridge, which needs
//     CAP_NET_ADMIN in the pod; phase1's tap stays an unused bridge port.
//     A <target dev=rec.Tap> would make libvirt try to create a tap that
//     already exists, and libvirt ignores (and reuses) vnet names, so no
//     target is the only form that works whatever libvirt does.
//   - [binding.InterfaceEthernet]: <interface type='ethernet'> with <target dev=rec.Tap
//     managed='no'>: libvirt opens phase1's tap as it is, which an
//     unprivileged libvirt can do (KubeVirt v0.53's form).
func Interface(vmi *api.VMI, p api.Pair, rec *cache.Interface, ifaceType binding.InterfaceType) (*libvirtxml.DomainInterface, error) {
	iface := p.Interface
	var ethernet bool
	switch ifaceType {
	case "", binding.InterfaceBridge:
	case binding.InterfaceEthernet:
		ethernet = true
	default:
		return nil, fmt.Errorf("%w %q is neither bridge nor ethernet", binding.ErrInterfaceType, ifaceType)
	}
	if rec == nil {
		return nil, fmt.Errorf("%w field *: no record", binding.ErrIncompleteRecord)
	}
	if !rec.MAC.IsValid() {
		return nil, fmt.Errorf("%w field mac: empty", binding.ErrIncompleteRecord)
	}
	addr, err := nicxml.GuestAddress(iface)
	if err != nil {
		return nil, fmt.Errorf("spec.domain.devices.interfaces[%d].pciAddress: %w", p.Index, err)
	}
	di := nicxml.Recorded(vmi, iface, rec, addr)
	if ethernet {
		if rec.Tap == "" {
			return nil, fmt.Errorf("%w field tap: empty", binding.ErrIncompleteRecord)
		}
		di.Source = &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}}
		di.Target = &libvirtxml.DomainInterfaceTarget{Dev: rec.Tap, Managed: "no"}
		return di, nil
	}
	if rec.Bridge == "" {
		return nil, fmt.Errorf("%w field bridge: empty", binding.ErrIncompleteRecord)
	}
	di.Source = &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: rec.Bridge}}
	return di, nil
}

// Render renders the interface and appends it to the domain's devices.
func Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	di, err := Interface(in.VMI, in.Pair, in.Record, in.Options.InterfaceType)
	if err != nil {
		return err
	}
	devs := nicxml.Devices(dom)
	devs.Interfaces = append(devs.Interfaces, *di)
	return nil
}
