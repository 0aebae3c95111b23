package domxml

import (
	"errors"
	"strconv"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

// KubeVirt v1.9.0's annotations on the hotplug capacity of a VMI.
const (
	// PCIInterfaceSlotCountAnnotation fixes the number of interface slots
	// (interfaces and placeholders) of a VM.
	PCIInterfaceSlotCountAnnotation = "kubevirt.io/pci-interface-slot-count"
	// PlacePCIDevicesOnRootComplexAnnotation ("true") puts every device
	// on the root complex: no root port, no hotplug capacity.
	PlacePCIDevicesOnRootComplexAnnotation = "kubevirt.io/placePCIDevicesOnRootComplex"
)

var errNegativePorts = errors.New("a count of root ports, HotplugPortsKubeVirt (0) or HotplugPortsNone (-1)")

// The special values of [Options.HotplugPorts].
const (
	// HotplugPortsKubeVirt, the default, reserves the number of spare
	// root ports [KubeVirtHotplugPorts] computes: what KubeVirt 1.x's
	// virt-launcher reserves, so that interfaces can be hot-plugged
	// into the running VM (phase2.Sync).
	HotplugPortsKubeVirt = 0
	// HotplugPortsNone reserves none: KubeVirt v0.53's domain, in which
	// a q35 guest can take no hot-plugged PCI device.
	HotplugPortsNone = -1
)

// KubeVirt v1.9.0's figures (virt-launcher's allocateHotplugPorts).
const (
	// hotplugV1Slots: without the slot-count annotation, interfaces and
	// placeholders fill 4 slots (when the VMI has an interface).
	hotplugV1Slots = 4
	// hotplugTotal and hotplugMinFree: the PCI devices and spare ports
	// a VM should reach, and the spare ports it gets at least; the large
	// figures for a guest of more than 2 GiB.
	hotplugTotal, hotplugMinFree           = 8, 3
	hotplugLargeTotal, hotplugLargeMinFree = 16, 6
	hotplugLargeMemory                     = 2 << 30
	// MaxHotplugPortIndex is the highest index a spare root port gets:
	// each root port takes a slot of bus 0, which has 32.
	MaxHotplugPortIndex = 31
)

// KubeVirtHotplugPorts is the number of spare pcie-root-port controllers
// KubeVirt v1.9.0 reserves for hot-plugging devices into a running VM of
// this VMI, given its domain before any spare root port is added ([Build]
// with [HotplugPortsNone], interfaces included): 0 unless the machine is
// q35 or with kubevirt.io/placePCIDevicesOnRootComplex: "true"; else the
// interface placeholders (kubevirt.io/pci-interface-slot-count minus the
// interfaces, or, without it, 4 minus the interfaces when there is one:
// its "v1" count) topped up to its "v2" count, the larger of 8 minus the
// PCI devices and 3 (16 and 6 for a guest of more than 2 GiB). The PCI
// devices are counted as KubeVirt counts them: interfaces, PCI host
// devices, controllers other than the PCI roots and root ports, virtio
// disks and inputs, watchdogs, rng, memory balloon.
func KubeVirtHotplugPorts(vmi *api.VMI, dom *libvirtxml.Domain) (int, error) {
	if dom.OS == nil || dom.OS.Type == nil || !isQ35(dom.OS.Type.Machine) || dom.Devices == nil {
		return 0, nil
	}
	if vmi.Metadata.Annotations[PlacePCIDevicesOnRootComplexAnnotation] == "true" {
		return 0, nil
	}
	ifaces := len(vmi.Spec.Domain.Devices.Interfaces)
	placeholders := 0
	if s, ok := vmi.Metadata.Annotations[PCIInterfaceSlotCountAnnotation]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fieldError("metadata.annotations["+PCIInterfaceSlotCountAnnotation+"]", s, err)
		}
		placeholders = max(0, n-ifaces)
	} else if ifaces > 0 {
		placeholders = max(0, hotplugV1Slots-ifaces)
	}
	total, minFree := hotplugTotal, hotplugMinFree
	if memoryBytes(dom) > hotplugLargeMemory {
		total, minFree = hotplugLargeTotal, hotplugLargeMinFree
	}
	desired := max(total-pciDevices(dom), minFree)
	return placeholders + max(0, desired-placeholders), nil
}

// memoryBytes is the domain's memory in bytes.
func memoryBytes(dom *libvirtxml.Domain) uint64 {
	if dom.Memory == nil {
		return 0
	}
	v := uint64(dom.Memory.Value)
	switch dom.Memory.Unit {
	case "b", "bytes":
		return v
	case "", "KiB", "k":
		return v << 10
	case "MiB", "M":
		return v << 20
	case "GiB", "G":
		return v << 30
	}
	return v
}

// pciDevices counts the domain's PCI devices as KubeVirt v1.9.0 does
// (converter.CountPCIDevices): those without an address or with a PCI one.
func pciDevices(dom *libvirtxml.Domain) int {
	d := dom.Devices
	n := 0
	count := func(a *libvirtxml.DomainAddress) {
		if a == nil || a.PCI != nil {
			n++
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
	for i := range d.Controllers {
		c := d.Controllers[i]
		if c.Type == "pci" && (c.Model == "pci-root" || c.Model == "pcie-root" || c.Model == "pcie-expander-bus" || c.Model == "pcie-root-port") {
			continue
		}
		count(c.Address)
	}
	for i := range d.Disks {
		if d.Disks[i].Target != nil && d.Disks[i].Target.Bus == "virtio" {
			count(d.Disks[i].Address)
		}
	}
	for i := range d.Inputs {
		if d.Inputs[i].Bus == "virtio" {
			count(d.Inputs[i].Address)
		}
	}
	for i := range d.Watchdogs {
		count(d.Watchdogs[i].Address)
	}
	for i := range d.RNGs {
		count(d.RNGs[i].Address)
	}
	if d.MemBalloon != nil {
		count(d.MemBalloon.Address)
	}
	return n
}

// AddHotplugPorts gives a q35 domain n spare pcie-root-port controllers
// beyond the ones its devices need ([EnsureRootPorts], which it calls
// first), at the next free indexes, none above [MaxHotplugPortIndex] (as
// KubeVirt v1.9.0 caps them). Called again after devices were added, it
// tops the spares up to n. Other machines and n <= 0 are a no-op.
func AddHotplugPorts(dom *libvirtxml.Domain, n int) error {
	if err := EnsureRootPorts(dom); err != nil {
		return err
	}
	if n <= 0 || dom.OS == nil || dom.OS.Type == nil || !isQ35(dom.OS.Type.Machine) || dom.Devices == nil {
		return nil
	}
	d := dom.Devices
	used := map[uint]bool{}
	for _, c := range d.Controllers {
		if c.Type == "pci" && c.Index != nil {
			used[*c.Index] = true
		}
	}
	next := uint(1)
	for spare := SpareRootPorts(dom); spare < n; spare++ {
		for used[next] {
			next++
		}
		if next > MaxHotplugPortIndex {
			break
		}
		used[next] = true
		d.Controllers = append(d.Controllers, libvirtxml.DomainController{Type: "pci", Index: uintp(next), Model: "pcie-root-port"})
	}
	return nil
}

// SpareRootPorts is how many pcie-root-port controllers of the domain no
// device needs ([EnsureRootPorts]'s count): the devices a running guest
// can still take by hot-plug.
func SpareRootPorts(dom *libvirtxml.Domain) int {
	if dom.Devices == nil {
		return 0
	}
	explicit, auto := rootPortDemand(dom.Devices)
	ports := 0
	for _, c := range dom.Devices.Controllers {
		if c.Type == "pci" && c.Model == "pcie-root-port" {
			ports++
		}
	}
	return max(0, ports-len(explicit)-auto)
}

// ReserveHotplugPorts sizes the root ports of a q35 domain: what its
// devices need ([EnsureRootPorts]) and n spare ones ([AddHotplugPorts]),
// n being [Options.HotplugPorts] ([HotplugPortsKubeVirt]: KubeVirt
// v1.9.0's count for the domain as it is now). [Build] calls it; a caller
// that adds devices afterwards (the interfaces of prestart's network
// step) calls it again to top the spares up.
func ReserveHotplugPorts(vmi *api.VMI, dom *libvirtxml.Domain, n int) error {
	switch {
	case n < HotplugPortsNone:
		return fieldError("Options.HotplugPorts", n, errNegativePorts)
	case n == HotplugPortsNone:
		n = 0
	case n == HotplugPortsKubeVirt:
		var err error
		if n, err = KubeVirtHotplugPorts(vmi, dom); err != nil {
			return err
		}
	}
	return AddHotplugPorts(dom, n)
}
