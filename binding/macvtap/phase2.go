package macvtap

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
	"github.com/virtnet/virtnet/domxml"
)

// Render appends the macvtap's <interface type='ethernet'> with
// <target dev='<macvtap>' managed='no'/> (see the package doc).
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	iface := in.Pair.Interface
	rec := in.Record
	if rec == nil || rec.Target == "" {
		return errNoRecord
	}
	addr, err := nicxml.GuestAddress(iface)
	if err != nil {
		return fmt.Errorf("pciAddress: %w", err)
	}
	boot, rom := nicxml.BootOrROM(iface)
	di := libvirtxml.DomainInterface{
		Source:  &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}},
		MAC:     nicxml.MAC(rec.MAC.String()),
		Target:  &libvirtxml.DomainInterfaceTarget{Dev: rec.Target, Managed: "no"},
		Model:   &libvirtxml.DomainInterfaceModel{Type: nicxml.Model(in.VMI, iface)},
		Driver:  nicxml.Driver(in.VMI, iface),
		Boot:    boot,
		ROM:     rom,
		Alias:   domxml.Alias(iface.Name),
		Address: addr,
		Link:    nicxml.Link(iface),
		ACPI:    nicxml.ACPI(iface),
	}
	if rec.MTU > 0 {
		di.MTU = &libvirtxml.DomainInterfaceMTU{Size: uint(rec.MTU)}
	}
	devs := nicxml.Devices(dom)
	devs.Interfaces = append(devs.Interfaces, di)
	return nil
}
