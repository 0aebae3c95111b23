package cloudinit_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/phase2/cloudinit"
)

// TestDevicesMetadata: KubeVirt's ConfigDrive device entries: tagged
// interfaces (with MAC) then tagged SR-IOV host devices (without), each
// with bus pci and its guest address; untagged devices and devices without
// a guest PCI address get none.
func TestDevicesMetadata(t *testing.T) {
	addr := func(bus, slot uint) *libvirtxml.DomainAddress {
		z := uint(0)
		return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &z, Bus: &bus, Slot: &slot, Function: &z}}
	}
	vmi := &api.VMI{}
	vmi.Spec.Domain.Devices.Interfaces = []api.Interface{
		{Name: "a", Tag: "front"}, {Name: "b"}, {Name: "vf", Tag: "fast"}, {Name: "c", Tag: "unplaced"},
	}
	dom := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{
		Interfaces: []libvirtxml.DomainInterface{
			{Alias: &libvirtxml.DomainAlias{Name: "ua-b"}, Address: addr(2, 0)},
			{Alias: &libvirtxml.DomainAlias{Name: "ua-a"}, Address: addr(10, 0), MAC: &libvirtxml.DomainInterfaceMAC{Address: "02:00:00:00:00:0a"}},
			{Alias: &libvirtxml.DomainAlias{Name: "ua-c"}},
		},
		Hostdevs: []libvirtxml.DomainHostdev{{Alias: &libvirtxml.DomainAlias{Name: "ua-sriov-vf"}, Address: addr(3, 1)}},
	}}
	require.Equal(t, []cloudinit.DeviceMetadata{
		{Type: "nic", Bus: "pci", Address: "0000:0a:00.0", MAC: "02:00:00:00:00:0a", Tags: []string{"front"}},
		{Type: "nic", Bus: "pci", Address: "0000:03:01.0", Tags: []string{"fast"}},
	}, cloudinit.DevicesMetadata(vmi, dom))
	vmi.Spec.Domain.Devices.Interfaces = nil
	require.Nil(t, cloudinit.DevicesMetadata(vmi, dom))
}
