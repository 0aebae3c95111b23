package sriov

import (
	"errors"
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
)

// Render appends the VF's <hostdev> (see the package doc).
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	iface := in.Pair.Interface
	a := allocate(in.VMI, in.Options.Env, in.Options.NetworkInfo)[iface.Name]
	if a.err != nil {
		return a.err
	}
	if a.address == "" {
		return errors.New("not an SR-IOV interface of the VMI")
	}
	host, err := nicxml.ParsePCIAddress(a.address)
	if err != nil {
		return fmt.Errorf("host address: %w", err)
	}
	guest, err := nicxml.GuestAddress(iface)
	if err != nil {
		return fmt.Errorf("pciAddress: %w", err)
	}
	hd := libvirtxml.DomainHostdev{
		Managed: "no",
		SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: host},
		},
		Boot:    nicxml.Boot(iface),
		Alias:   &libvirtxml.DomainAlias{Name: Binding{}.DeviceAlias(iface.Name)},
		Address: guest,
		ACPI:    nicxml.ACPI(iface),
	}
	devs := nicxml.Devices(dom)
	devs.Hostdevs = append(devs.Hostdevs, hd)
	return nil
}
