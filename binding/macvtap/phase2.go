package macvtap

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
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
	di := nicxml.Recorded(in.VMI, iface, rec, addr)
	di.Source = &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}}
	di.Target = &libvirtxml.DomainInterfaceTarget{Dev: rec.Target, Managed: "no"}
	devs := nicxml.Devices(dom)
	devs.Interfaces = append(devs.Interfaces, *di)
	return nil
}
