package domxml

import (
	"fmt"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

// UserAliasPrefix starts every alias virtnet gives a device: libvirt keeps
// aliases that start with "ua-" ("user alias") as given.
const UserAliasPrefix = "ua-"

// Alias is the user alias of a device named name: "ua-<name>".
func Alias(name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: UserAliasPrefix + name}
}

// diskDevName is the target name of the n-th (from 0) disk with a prefix:
// vda…vdz, vdaa…, as the kernel names them.
func diskDevName(prefix string, n int) string {
	s := ""
	for n++; n > 0; n = (n - 1) / 26 {
		s = string(rune('a'+(n-1)%26)) + s
	}
	return prefix + s
}

func disks(vmi *api.VMI, o Options, d *libvirtxml.DomainDeviceList) error {
	vols := make(map[string]int, len(vmi.Spec.Volumes))
	for i, v := range vmi.Spec.Volumes {
		vols[v.Name] = i
	}
	counters := map[string]int{}
	scsi := false
	for i := range vmi.Spec.Domain.Devices.Disks {
		spec := &vmi.Spec.Domain.Devices.Disks[i]
		path := fmt.Sprintf("spec.domain.devices.disks[%d]", i)
		vi, ok := vols[spec.Name]
		if !ok {
			return &VolumeError{Disk: path, Volume: spec.Name, Reason: "no volume with this name in spec.volumes"}
		}
		src, err := DiskPath(vmi, vi, o)
		if err != nil {
			return err
		}
		disk, err := diskDevice(vmi, spec, path, src, counters)
		if err != nil {
			return err
		}
		if disk.Target.Bus == "scsi" {
			scsi = true
		}
		d.Disks = append(d.Disks, disk)
	}
	if scsi {
		d.Controllers = append(d.Controllers, libvirtxml.DomainController{Type: "scsi", Index: uintp(0), Model: VirtioModel(vmi)})
	}
	return nil
}

func diskDevice(vmi *api.VMI, spec *api.Disk, path string, src DiskSource, counters map[string]int) (libvirtxml.DomainDisk, error) {
	device, bus, readonly, pci := "disk", "virtio", false, ""
	switch {
	case spec.CDRom != nil:
		device, bus = "cdrom", "sata"
		if spec.CDRom.Bus != "" {
			bus = spec.CDRom.Bus
		}
		readonly = spec.CDRom.ReadOnly == nil || *spec.CDRom.ReadOnly
	case spec.LUN != nil:
		device, bus, readonly = "lun", "scsi", spec.LUN.ReadOnly
		if spec.LUN.Bus != "" {
			bus = spec.LUN.Bus
		}
	case spec.Disk != nil:
		if spec.Disk.Bus != "" {
			bus = spec.Disk.Bus
		}
		readonly, pci = spec.Disk.ReadOnly, spec.Disk.PciAddress
	}
	if device == "lun" && src.Type != "block" {
		return libvirtxml.DomainDisk{}, &VolumeError{Disk: path, Volume: spec.Name,
			Reason: "a lun needs a block volume (a PVC or DataVolume listed in Options.BlockVolumes)"}
	}
	prefix := "sd"
	switch bus {
	case "virtio":
		prefix = "vd"
	case "sata", "scsi":
	default:
		return libvirtxml.DomainDisk{}, errorf(path+".bus", bus, "unknown disk bus; one of virtio, sata, scsi")
	}
	disk := libvirtxml.DomainDisk{
		Device: device,
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: src.Format, Cache: spec.Cache},
		Target: &libvirtxml.DomainDiskTarget{Dev: diskDevName(prefix, counters[prefix]), Bus: bus},
		Serial: spec.Serial,
		Alias:  Alias(spec.Name),
	}
	counters[prefix]++
	if device == "cdrom" && spec.CDRom.Tray != "" {
		disk.Target.Tray = spec.CDRom.Tray
	}
	switch src.Type {
	case "block":
		disk.Source = &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: src.Path}}
	default:
		disk.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: src.Path}}
	}
	if src.Backing != "" {
		disk.BackingStore = &libvirtxml.DomainDiskBackingStore{
			Format: &libvirtxml.DomainDiskFormat{Type: "raw"},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: src.Backing}},
		}
	}
	if readonly || src.ReadOnly {
		disk.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	if spec.Shareable != nil && *spec.Shareable {
		disk.Shareable = &libvirtxml.DomainDiskShareable{}
		disk.Driver.Cache = "none"
	}
	if spec.BootOrder != nil {
		disk.Boot = &libvirtxml.DomainDeviceBoot{Order: *spec.BootOrder}
	}
	if pci != "" {
		if bus != "virtio" {
			return libvirtxml.DomainDisk{}, errorf(path+".disk.pciAddress", pci, "a PCI address needs bus virtio, not %s", bus)
		}
		addr, err := pciAddress(pci)
		if err != nil {
			return libvirtxml.DomainDisk{}, &FieldError{Path: path + ".disk.pciAddress", Value: pci, Err: err}
		}
		disk.Address = addr
	}
	return disk, nil
}
