package domxml

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

var pciRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([01][0-9a-fA-F])\.([0-7])$`)
})

// pciAddress parses a guest PCI address "dddd:bb:ss.f" (the form of
// pciAddress in a VMI) into a libvirt <address type='pci'>, or returns a
// error matching [ErrPCIAddress].
func pciAddress(s string) (*libvirtxml.DomainAddress, error) {
	m := pciRE().FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("domxml: %w %q: not dddd:bb:ss.f", ErrPCIAddress, s)
	}
	var v [4]uint
	for i := range v {
		n, _ := strconv.ParseUint(m[i+1], 16, 16) // at most 4 hex digits: cannot fail
		v[i] = uint(n)
	}
	return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{
		Domain: &v[0], Bus: &v[1], Slot: &v[2], Function: &v[3],
	}}, nil
}

// MaxPCIControllerIndex is the highest PCI controller index libvirt accepts.
const MaxPCIControllerIndex = 255

// EnsureRootPorts gives a q35 domain enough pcie-root-port controllers for
// its PCI devices and is a no-op for other machines. It may be called
// again after devices were added: it only adds what is missing.
//
// A device with an explicit PCI address on bus N>0 gets a root port of
// index N (a root port has one slot: such addresses should use slot 0).
// Every other PCI device (virtio disks, interfaces, SCSI and
// virtio-serial controllers, PCI host devices, rng, a virtio balloon)
// counts for one root port, so that libvirt can place it without adding
// controllers itself. Missing indexes are filled from 1 upwards, and the
// root ports are kept sorted by index after the other controllers: the
// result depends only on the devices.
func EnsureRootPorts(dom *libvirtxml.Domain) error {
	if dom.OS == nil || dom.OS.Type == nil || !isQ35(dom.OS.Type.Machine) || dom.Devices == nil {
		return nil
	}
	d := dom.Devices
	explicit, auto := rootPortDemand(d)

	used := map[uint]bool{}
	var others, ports []libvirtxml.DomainController
	for _, c := range d.Controllers {
		if c.Type == "pci" && c.Index != nil {
			used[*c.Index] = true
		}
		if c.Type == "pci" && c.Model == "pcie-root-port" {
			ports = append(ports, c)
		} else {
			others = append(others, c)
		}
	}
	add := func(i uint) error {
		if i > MaxPCIControllerIndex {
			return fieldError("devices", i, errTooManyPCI)
		}
		used[i] = true
		ports = append(ports, libvirtxml.DomainController{Type: "pci", Index: uintp(i), Model: "pcie-root-port"})
		return nil
	}
	buses := make([]uint, 0, len(explicit))
	for b := range explicit {
		buses = append(buses, b)
	}
	slices.Sort(buses)
	for _, b := range buses {
		if !used[b] {
			if err := add(b); err != nil {
				return err
			}
		}
	}
	next := uint(1)
	for len(ports) < len(explicit)+auto {
		for used[next] {
			next++
		}
		if err := add(next); err != nil {
			return err
		}
	}
	slices.SortStableFunc(ports, func(a, b libvirtxml.DomainController) int {
		return int(*a.Index) - int(*b.Index)
	})
	d.Controllers = append(others, ports...)
	return nil
}

// rootPortDemand is what the devices ask of root ports: the buses of
// explicit PCI addresses, and the number of devices libvirt places.
func rootPortDemand(d *libvirtxml.DomainDeviceList) (explicit map[uint]bool, auto int) {
	explicit = map[uint]bool{}
	count := func(a *libvirtxml.DomainAddress) {
		switch {
		case a == nil || a.PCI == nil:
			auto++
		case a.PCI.Bus != nil && *a.PCI.Bus > 0:
			explicit[*a.PCI.Bus] = true
		}
	}
	for i := range d.Disks {
		if d.Disks[i].Target != nil && d.Disks[i].Target.Bus == "virtio" {
			count(d.Disks[i].Address)
		}
	}
	for i := range d.Controllers {
		if t := d.Controllers[i].Type; t == "scsi" || t == "virtio-serial" {
			count(d.Controllers[i].Address)
		}
	}
	for i := range d.Interfaces {
		count(d.Interfaces[i].Address)
	}
	for i := range d.Hostdevs {
		if d.Hostdevs[i].SubsysPCI != nil {
			count(d.Hostdevs[i].Address)
		}
	}
	for i := range d.RNGs {
		count(d.RNGs[i].Address)
	}
	if d.MemBalloon != nil && d.MemBalloon.Model != "none" {
		count(d.MemBalloon.Address)
	}
	return explicit, auto
}

// PinTagged gives every device of a tagged interface
// (spec.domain.devices.interfaces[].tag) that has no guest PCI address one
// now, so that the address is known before libvirt defines the domain (the
// ConfigDrive device metadata names it): slot 0 of the lowest root-port
// bus no other device's explicit address uses, in interface order. The
// device is the <interface> or SR-IOV <hostdev> whose alias is
// "ua-<name>" or "ua-sriov-<name>". Only q35 domains get addresses; for
// other machines PinTagged does nothing. It calls [EnsureRootPorts].
func PinTagged(tags map[string]string, dom *libvirtxml.Domain) error {
	if dom.OS == nil || dom.OS.Type == nil || !isQ35(dom.OS.Type.Machine) || dom.Devices == nil || len(tags) == 0 {
		return nil
	}
	d := dom.Devices
	used := map[uint]bool{}
	mark := func(a *libvirtxml.DomainAddress) {
		if a != nil && a.PCI != nil && a.PCI.Bus != nil {
			used[*a.PCI.Bus] = true
		}
	}
	for i := range d.Disks {
		mark(d.Disks[i].Address)
	}
	for i := range d.Controllers {
		mark(d.Controllers[i].Address)
	}
	for i := range d.Interfaces {
		mark(d.Interfaces[i].Address)
	}
	for i := range d.Hostdevs {
		mark(d.Hostdevs[i].Address)
	}
	next := uint(1)
	pin := func(a **libvirtxml.DomainAddress) {
		if *a != nil && (*a).PCI != nil {
			return
		}
		for used[next] {
			next++
		}
		used[next] = true
		zero, bus := uint(0), next
		*a = &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &zero, Bus: &bus, Slot: &zero, Function: &zero}}
	}
	for i := range d.Interfaces {
		if a := d.Interfaces[i].Alias; a != nil && tags[strings.TrimPrefix(a.Name, UserAliasPrefix)] != "" {
			pin(&d.Interfaces[i].Address)
		}
	}
	for i := range d.Hostdevs {
		if a := d.Hostdevs[i].Alias; a != nil && tags[strings.TrimPrefix(a.Name, UserAliasPrefix+SRIOVAliasPrefix)] != "" {
			pin(&d.Hostdevs[i].Address)
		}
	}
	return EnsureRootPorts(dom)
}

// Tags maps each tagged interface of the VMI to its tag.
func Tags(vmi *api.VMI) map[string]string {
	m := map[string]string{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Tag != "" {
			m[iface.Name] = iface.Tag
		}
	}
	return m
}
