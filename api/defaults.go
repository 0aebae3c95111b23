package api

import (
	"cmp"

	"github.com/virtnet/virtnet/internal/uuidv5"
)

// QemuID is the uid and gid of the qemu user of KubeVirt's launcher
// images: QEMU of a non-root VMI runs as it, so it owns that VMI's taps
// (phase1.TapOwnerFor, the macvtap CNI's default owner) and is passt's
// ping group.
const QemuID = 107

// Defaults KubeVirt applies, and that [SetDefaults] reproduces.
const (
	// DefaultNetworkName is the name of the pod network and of its
	// interface added when a VMI declares none.
	DefaultNetworkName = "default"
	// DefaultModel is the interface model when none is given.
	DefaultModel = "virtio"
	// DefaultVMNetworkCIDR is the masquerade IPv4 network.
	DefaultVMNetworkCIDR = "10.0.2.0/24"
	// DefaultVMIPv6NetworkCIDR is the masquerade IPv6 network.
	DefaultVMIPv6NetworkCIDR = "fd10:0:2::/120"
	// DefaultProtocol is a port's protocol when none is given.
	DefaultProtocol = "TCP"
	// DefaultDiskBus is the bus of a disk, cdrom or lun that names none
	// (KubeVirt's: guests support SATA without drivers).
	DefaultDiskBus = "sata"
	// FirmwareUUIDNamespace is the name-space UUID from which KubeVirt's
	// VirtualMachine controller derives a VM's firmware UUID: the
	// version-5 UUID of the VM's name under it ([VMFirmwareUUID]).
	FirmwareUUIDNamespace = "6a1a24a1-4061-4607-8bf4-a3963d0c5895"
	// UIDNamespace is the name-space UUID of [DerivedUID]: SHA-1 of the
	// string "virtnet.domain" under the URL namespace (RFC 4122), written
	// here so that it never changes (domxml.UUIDNamespace is the same).
	UIDNamespace = "df80d55b-855c-5311-b7ce-dba48016db35"
)

// DerivedUID is the metadata.uid [SetDefaults] gives a VMI that has none:
// the version-5 UUID of "<namespace>/<name>" under [UIDNamespace]. The API
// server gives every object a random uid when it is created; a manifest
// read from a file has none, and phase1's records (cache/<uid>/), the
// domain UUID and the launcher must agree on one that is the same on
// every run and in every process that loads the file. Two VMIs of one
// namespace and name (one deleted, the other created later from the same
// file) get the same uid: run phase1.Cleanup for the first, as KubeVirt's
// virt-handler does when a VMI goes away.
func DerivedUID(namespace, name string) string {
	return uuidv5.SHA1(UIDNamespace, namespace+"/"+name)
}

// VMFirmwareUUID is the firmware UUID KubeVirt gives the VMI of a
// VirtualMachine named name that sets none: stable across restarts, and
// the same for VMs of one name in different namespaces, as in KubeVirt.
func VMFirmwareUUID(name string) string {
	return uuidv5.SHA1(FirmwareUUIDNamespace, name)
}

// SetDefaults applies the defaults KubeVirt's mutating webhook applies to
// the fields virtnet reads:
//
//   - when the VMI has neither interfaces nor networks and
//     autoattachPodInterface is not false, a pod network named "default" and
//     a bridge interface of the same name (KubeVirt's default binding when
//     the cluster configures none);
//   - an interface without a model gets "virtio";
//   - a port without a protocol gets "TCP";
//   - a VMI without a namespace gets "default";
//   - a VMI with a name and no metadata.uid gets [DerivedUID] of its
//     namespace and name (the uid the API server would otherwise assign,
//     made stable: see [DerivedUID]);
//   - a disk that names none of disk, cdrom and lun is a disk; a disk,
//     cdrom or lun without a bus gets [DefaultDiskBus] (sata); a cdrom
//     without a tray state gets "closed";
//   - a CPU feature without a policy gets "require".
//
// It is idempotent. (A VirtualMachine's stable firmware UUID is set by
// [Decode], which knows the manifest's kind.)
func SetDefaults(vmi *VMI) {
	vmi.Metadata.Namespace = cmp.Or(vmi.Metadata.Namespace, "default")
	if vmi.Metadata.UID == "" && vmi.Metadata.Name != "" {
		vmi.Metadata.UID = DerivedUID(vmi.Metadata.Namespace, vmi.Metadata.Name)
	}
	for i := range vmi.Spec.Domain.Devices.Disks {
		d := &vmi.Spec.Domain.Devices.Disks[i]
		switch {
		case d.Disk == nil && d.CDRom == nil && d.LUN == nil:
			d.Disk = &DiskTarget{Bus: DefaultDiskBus}
		case d.Disk != nil && d.Disk.Bus == "":
			d.Disk.Bus = DefaultDiskBus
		case d.CDRom != nil:
			d.CDRom.Bus = cmp.Or(d.CDRom.Bus, DefaultDiskBus)
			d.CDRom.Tray = cmp.Or(d.CDRom.Tray, "closed")
		case d.LUN != nil && d.LUN.Bus == "":
			d.LUN.Bus = DefaultDiskBus
		}
	}
	if c := vmi.Spec.Domain.CPU; c != nil {
		for i := range c.Features {
			c.Features[i].Policy = cmp.Or(c.Features[i].Policy, "require")
		}
	}
	d := &vmi.Spec.Domain.Devices
	auto := d.AutoattachPodInterface == nil || *d.AutoattachPodInterface
	if auto && len(d.Interfaces) == 0 && len(vmi.Spec.Networks) == 0 {
		vmi.Spec.Networks = []Network{{Name: DefaultNetworkName, Pod: &PodNetwork{}}}
		d.Interfaces = []Interface{{Name: DefaultNetworkName, Bridge: &struct{}{}}}
	}
	for i := range d.Interfaces {
		iface := &d.Interfaces[i]
		iface.Model = cmp.Or(iface.Model, DefaultModel)
		for j := range iface.Ports {
			iface.Ports[j].Protocol = cmp.Or(iface.Ports[j].Protocol, DefaultProtocol)
		}
	}
}
