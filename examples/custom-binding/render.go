package tapbinding

import (
	"errors"
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
)

// Render implements [binding.Phase2]: <interface type='ethernet'> on the
// tap phase1 made (managed='no': libvirt opens it and does not create
// it), with the VMI's MAC, model (virtio unless the VMI names another),
// PCI address and boot order, the pod link's MTU and the alias
// ua-<interface> by which launchers find the device.
func (Binding) Render(in binding.RenderInput, dom *libvirtxml.Domain) error {
	rec := in.Record
	if rec == nil || rec.Tap == "" {
		return errors.New("the record names no tap")
	}
	iface := in.Pair.Interface
	model := iface.Model
	if model == "" {
		model = api.DefaultModel
	}
	dev := libvirtxml.DomainInterface{
		Source: &libvirtxml.DomainInterfaceSource{Ethernet: &libvirtxml.DomainInterfaceSourceEthernet{}},
		Target: &libvirtxml.DomainInterfaceTarget{Dev: rec.Tap, Managed: "no"},
		Model:  &libvirtxml.DomainInterfaceModel{Type: model},
		Alias:  &libvirtxml.DomainAlias{Name: "ua-" + iface.Name},
	}
	if rec.MAC.IsValid() {
		dev.MAC = &libvirtxml.DomainInterfaceMAC{Address: rec.MAC.String()}
	}
	if rec.MTU > 0 {
		dev.MTU = &libvirtxml.DomainInterfaceMTU{Size: uint(rec.MTU)}
	}
	if iface.BootOrder != nil {
		dev.Boot = &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}
	}
	if iface.PciAddress != "" {
		addr, err := pciAddress(iface.PciAddress)
		if err != nil {
			return &api.FieldError{Path: "pciAddress", Value: iface.PciAddress, Reason: err.Error()}
		}
		dev.Address = &libvirtxml.DomainAddress{PCI: addr}
	}
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	dom.Devices.Interfaces = append(dom.Devices.Interfaces, dev)
	return nil
}

// pciAddress parses dddd:bb:ss.f (api.Validate checked the form).
func pciAddress(s string) (*libvirtxml.DomainAddressPCI, error) {
	var domain, bus, slot, function uint
	if n, err := fmt.Sscanf(s, "%04x:%02x:%02x.%1x", &domain, &bus, &slot, &function); err != nil || n != 4 {
		return nil, errors.New("not a PCI address dddd:bb:ss.f")
	}
	return &libvirtxml.DomainAddressPCI{Domain: &domain, Bus: &bus, Slot: &slot, Function: &function}, nil
}
