package passt

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
	"github.com/virtnet/virtnet/domxml"
)

// Render appends the interface's <interface type='user'> with
// <backend type='passt'/> (see the package doc).
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	iface := in.Pair.Interface
	pfs, err := PortForwards(iface)
	if err != nil {
		return err
	}
	addr, err := nicxml.GuestAddress(iface)
	if err != nil {
		return fmt.Errorf("pciAddress: %w", err)
	}
	boot, rom := nicxml.BootOrROM(iface)
	di := libvirtxml.DomainInterface{
		MAC:         nicxml.MAC(iface.MacAddress),
		Source:      &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{Dev: in.Pair.PodInterface}},
		PortForward: pfs,
		Model:       &libvirtxml.DomainInterfaceModel{Type: nicxml.Model(in.VMI, iface)},
		Backend:     &libvirtxml.DomainInterfaceBackend{Type: "passt"},
		Boot:        boot,
		ROM:         rom,
		Alias:       domxml.Alias(iface.Name),
		Address:     addr,
		Link:        nicxml.Link(iface),
		ACPI:        nicxml.ACPI(iface),
	}
	devs := nicxml.Devices(dom)
	devs.Interfaces = append(devs.Interfaces, di)
	return nil
}
