package nicxml

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
)

// Model is the libvirt model of an interface: KubeVirt turns "virtio"
// into "virtio-non-transitional" ("virtio-transitional" when the VMI sets
// useVirtioTransitional) so that the device is a modern virtio 1.0 PCI
// device; other models are passed as they are. An empty model is virtio.
func Model(vmi *api.VMI, iface *api.Interface) string {
	m := cmp.Or(iface.Model, api.DefaultModel)
	if m != "virtio" {
		return m
	}
	return domxml.VirtioModel(vmi)
}

// Driver is the <driver> of a virtio interface with multiqueue: vhost with
// one queue per vCPU (see [api.VMI.Queues]); nil otherwise.
func Driver(vmi *api.VMI, iface *api.Interface) *libvirtxml.DomainInterfaceDriver {
	q := vmi.Queues()
	if q == 0 || !iface.IsVirtio() {
		return nil
	}
	return &libvirtxml.DomainInterfaceDriver{Name: "vhost", Queues: uint(q)}
}

// MAC is the <mac> of an address, or nil for "" (libvirt then generates
// one).
func MAC(mac string) *libvirtxml.DomainInterfaceMAC {
	if mac == "" {
		return nil
	}
	return &libvirtxml.DomainInterfaceMAC{Address: strings.ToLower(mac)}
}

// Recorded is the NIC of an interface on a link phase1 recorded (the
// bridge, masquerade and macvtap bindings): <mac> and <mtu> (omitted when
// 0) from the record, the model, the vhost <driver>, <boot order> or <rom
// enabled='no'>, the alias, the PCI address addr, the link state and the
// ACPI index. The caller sets the source and the target.
func Recorded(vmi *api.VMI, iface *api.Interface, rec *cache.Interface, addr *libvirtxml.DomainAddress) *libvirtxml.DomainInterface {
	boot, rom := BootOrROM(iface)
	di := &libvirtxml.DomainInterface{
		MAC:     MAC(rec.MAC.String()),
		Model:   &libvirtxml.DomainInterfaceModel{Type: Model(vmi, iface)},
		Driver:  Driver(vmi, iface),
		Boot:    boot,
		ROM:     rom,
		Alias:   domxml.Alias(iface.Name),
		Address: addr,
		Link:    Link(iface),
		ACPI:    ACPI(iface),
	}
	if rec.MTU > 0 {
		di.MTU = &libvirtxml.DomainInterfaceMTU{Size: uint(rec.MTU)}
	}
	return di
}

// BootOrROM returns the <boot order> of an interface with a bootOrder, or
// else a <rom enabled='no'/>: KubeVirt disables the option ROM of every
// NIC that is not a boot device, so that no iPXE is loaded.
func BootOrROM(iface *api.Interface) (*libvirtxml.DomainDeviceBoot, *libvirtxml.DomainROM) {
	if iface.BootOrder != nil {
		return &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}, nil
	}
	return nil, &libvirtxml.DomainROM{Enabled: "no"}
}

// Boot returns the <boot order> of an interface with a bootOrder, or nil.
func Boot(iface *api.Interface) *libvirtxml.DomainDeviceBoot {
	b, _ := BootOrROM(iface)
	return b
}

// GuestAddress is the guest <address type='pci'> of an interface's
// pciAddress, or nil when it has none.
func GuestAddress(iface *api.Interface) (*libvirtxml.DomainAddress, error) {
	if iface.PciAddress == "" {
		return nil, nil
	}
	pci, err := ParsePCIAddress(iface.PciAddress)
	if err != nil {
		return nil, err
	}
	return &libvirtxml.DomainAddress{PCI: pci}, nil
}

// ParsePCIAddress parses dddd:bb:ss.f (hexadecimal; the domain may have 1
// to 4 digits, bus and slot 1 or 2, the function is 0-7), the form of
// sysfs, of the SR-IOV device plugin and of a VMI's pciAddress. A slot
// above 0x1f is refused as PCI has 32 slots.
func ParsePCIAddress(s string) (*libvirtxml.DomainAddressPCI, error) {
	bad := func(reason string) error { return fmt.Errorf("%w %q: %s", domxml.ErrPCIAddress, s, reason) }
	dbs, fn, ok := strings.Cut(s, ".")
	if !ok {
		return nil, bad("no '.' before the function")
	}
	parts := strings.Split(dbs, ":")
	if len(parts) != 3 {
		return nil, bad("want domain:bus:slot.function")
	}
	var vals [4]uint
	for i, f := range []struct {
		name   string
		text   string
		digits int
		max    uint64
	}{
		{"domain", parts[0], 4, 0xffff},
		{"bus", parts[1], 2, 0xff},
		{"slot", parts[2], 2, 0x1f},
		{"function", fn, 1, 7},
	} {
		if f.text == "" || len(f.text) > f.digits {
			return nil, bad(f.name + " must have 1 to " + strconv.Itoa(f.digits) + " hex digits")
		}
		v, err := strconv.ParseUint(f.text, 16, 16)
		if err != nil {
			return nil, bad(f.name + " is not hexadecimal")
		}
		if v > f.max {
			return nil, bad(f.name + " above 0x" + strconv.FormatUint(f.max, 16))
		}
		vals[i] = uint(v)
	}
	return &libvirtxml.DomainAddressPCI{Domain: &vals[0], Bus: &vals[1], Slot: &vals[2], Function: &vals[3]}, nil
}

// Devices returns the domain's device list, creating it if needed.
func Devices(dom *libvirtxml.Domain) *libvirtxml.DomainDeviceList {
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	return dom.Devices
}

// Link returns <link state='down'/> for an interface whose state is down
// (KubeVirt 1.x's interfaces[].state), nil otherwise: the guest sees the
// NIC without carrier until the link is set up.
func Link(iface *api.Interface) *libvirtxml.DomainInterfaceLink {
	if !iface.LinkDown() {
		return nil
	}
	return &libvirtxml.DomainInterfaceLink{State: "down"}
}

// ACPI returns <acpi index='N'/> for an interface with an acpiIndex, nil
// otherwise.
func ACPI(iface *api.Interface) *libvirtxml.DomainDeviceACPI {
	if iface.ACPIIndex <= 0 {
		return nil
	}
	return &libvirtxml.DomainDeviceACPI{Index: uint(iface.ACPIIndex)}
}

// ForwardProtocol is the lower-case protocol of a declared port that a
// user-space network forwards (tcp when unset); a port it cannot forward
// is a [*binding.PortError].
func ForwardProtocol(iface *api.Interface, p api.Port) (string, error) {
	proto := cmp.Or(strings.ToLower(p.Protocol), "tcp")
	if (proto != "tcp" && proto != "udp") || p.Port < 1 || p.Port > 65535 {
		return "", &binding.PortError{Interface: iface.Name, Protocol: p.Protocol, Port: p.Port}
	}
	return proto, nil
}
