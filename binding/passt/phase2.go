package passt

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/netdriver"
)

// LogFile is where passt logs in the vhost-user form (KubeVirt v1.9's
// path in the launcher).
const LogFile = "/var/run/kubevirt/passt.log"

// Render appends the interface's device (see the package doc): KubeVirt
// 1.x's passtBinding gets the vhost-user form v1.9 renders, with shared
// memfd memory; passt: {} and binding: {name: passt} the older
// type='user' form.
//
// The vhost-user form is KubeVirt v1.9's passtBinding device
// (converter/network configurator.go passtBindingOptions): <interface
// type='vhostuser'> on the pod interface, <backend type='passt'
// logFile=[LogFile]>, the port forwards (Istio's reserved ports excluded
// when the VMI has Istio's sidecar), the virtio <driver> with multiqueue,
// and no <rom>; plus the memory KubeVirt gives a VMI with passtBinding
// (vhost-user needs guest memory QEMU can share with passt): memfd
// source, shared access and, unless there is one, a NUMA cell of all the
// vCPUs and memory.
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
	di := libvirtxml.DomainInterface{
		MAC:         nicxml.MAC(iface.MacAddress),
		PortForward: pfs,
		Model:       &libvirtxml.DomainInterfaceModel{Type: nicxml.Model(in.VMI, iface)},
		Backend:     &libvirtxml.DomainInterfaceBackend{Type: "passt"},
		Alias:       domxml.Alias(iface.Name),
		Address:     addr,
		Link:        nicxml.Link(iface),
		ACPI:        nicxml.ACPI(iface),
	}
	if iface.PasstBinding != nil {
		if in.VMI.IstioProxy() {
			di.PortForward = istioForwards(iface, pfs)
		}
		di.Source = &libvirtxml.DomainInterfaceSource{VHostUser: &libvirtxml.DomainInterfaceSourceVHostUser{Dev: in.Pair.PodInterface}}
		di.Driver = nicxml.Driver(in.VMI, iface)
		di.Backend.LogFile = LogFile
		di.Boot = nicxml.Boot(iface)
		SharedMemory(in.VMI, dom)
	} else {
		di.Source = &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{Dev: in.Pair.PodInterface}}
		di.Boot, di.ROM = nicxml.BootOrROM(iface)
	}
	devs := nicxml.Devices(dom)
	devs.Interfaces = append(devs.Interfaces, di)
	return nil
}

// istioForwards is v1.9's passt forwarding with Istio's sidecar: the
// reserved ports excluded from the TCP forwards. As in v1.9, without
// declared ports this leaves one TCP forward of every port but those, and
// no UDP forward.
func istioForwards(iface *api.Interface, pfs []libvirtxml.DomainInterfaceSourcePortForward) []libvirtxml.DomainInterfaceSourcePortForward {
	var excl []libvirtxml.DomainInterfaceSourcePortForwardRange
	for _, p := range netdriver.IstioReservedPorts() {
		excl = append(excl, libvirtxml.DomainInterfaceSourcePortForwardRange{Start: uint(p), Exclude: "yes"})
	}
	if len(iface.Ports) == 0 {
		return []libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp", Ranges: excl}}
	}
	for i := range pfs {
		if pfs[i].Proto == "tcp" {
			pfs[i].Ranges = append(excl, pfs[i].Ranges...)
			return pfs
		}
	}
	return append([]libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp", Ranges: excl}}, pfs...)
}

// SharedMemory gives the domain the guest memory vhost-user needs, as
// KubeVirt v1.9 does for a VMI with passtBinding: memfd source, shared
// access, and one NUMA cell of every vCPU and the memory when the domain
// has no NUMA cell yet.
func SharedMemory(vmi *api.VMI, dom *libvirtxml.Domain) {
	if dom.MemoryBacking == nil {
		dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{}
	}
	dom.MemoryBacking.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
	dom.MemoryBacking.MemoryAccess = &libvirtxml.DomainMemoryAccess{Mode: "shared"}
	if dom.CPU == nil {
		dom.CPU = &libvirtxml.DomainCPU{}
	}
	if dom.CPU.Numa != nil && len(dom.CPU.Numa.Cell) > 0 {
		return
	}
	var kib uint
	if dom.Memory != nil {
		kib = dom.Memory.Value
		switch dom.Memory.Unit {
		case "b", "bytes":
			kib /= 1024
		case "M", "MiB":
			kib *= 1024
		case "G", "GiB":
			kib *= 1024 * 1024
		}
	}
	zero := uint(0)
	dom.CPU.Numa = &libvirtxml.DomainNuma{Cell: []libvirtxml.DomainCell{{
		ID: &zero, CPUs: fmt.Sprintf("0-%d", max(vmi.VCPUs(), 1)-1), Memory: kib, Unit: "KiB",
	}}}
}
