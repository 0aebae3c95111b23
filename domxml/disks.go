package domxml

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

// UserAliasPrefix starts every alias virtnet gives a device: libvirt keeps
// aliases that start with "ua-" ("user alias") as given.
const UserAliasPrefix = "ua-"

// SRIOVAliasPrefix follows [UserAliasPrefix] in the alias of an SR-IOV
// interface's <hostdev>, "ua-sriov-<name>" (KubeVirt's sriov.AliasPrefix),
// which tells SR-IOV host devices apart from other ones.
const SRIOVAliasPrefix = "sriov-"

// Alias is the user alias of a device named name: "ua-<name>". Every
// "ua-" alias virtnet renders (disks, interfaces, host devices) is made
// here.
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
			return fmt.Errorf("domxml: %s: %w %q: no volume with this name in spec.volumes", path, ErrVolume, spec.Name)
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
	// KubeVirt adds the virtio-scsi controller for SCSI disks and, unless
	// disableHotplug, for disks hotplugged later.
	if scsi || !vmi.Spec.Domain.Devices.DisableHotplug {
		d.Controllers = append(d.Controllers, libvirtxml.DomainController{Type: "scsi", Index: uintp(0), Model: VirtioModel(vmi)})
	}
	return nil
}

func diskDevice(vmi *api.VMI, spec *api.Disk, path string, src DiskSource, counters map[string]int) (libvirtxml.DomainDisk, error) {
	device, bus, readonly, pci, busPath := "disk", api.DefaultDiskBus, false, "", path+".disk.bus"
	switch {
	case spec.CDRom != nil:
		device, bus, busPath = "cdrom", cmp.Or(spec.CDRom.Bus, bus), path+".cdrom.bus"
		readonly = spec.CDRom.ReadOnly == nil || *spec.CDRom.ReadOnly
	case spec.LUN != nil:
		device, bus, readonly, busPath = "lun", cmp.Or(spec.LUN.Bus, bus), spec.LUN.ReadOnly, path+".lun.bus"
	case spec.Disk != nil:
		bus, readonly, pci = cmp.Or(spec.Disk.Bus, bus), spec.Disk.ReadOnly, spec.Disk.PciAddress
	}
	if device == "lun" && src.Type != "block" {
		return libvirtxml.DomainDisk{}, fmt.Errorf("domxml: %s: %w %q: a lun needs a block volume (a PVC or DataVolume listed in Options.BlockVolumes)", path, ErrVolume, spec.Name)
	}
	if device == "lun" && bus != "scsi" && bus != "virtio" {
		// KubeVirt defaults a lun to sata too, which libvirt refuses.
		return libvirtxml.DomainDisk{}, errorf(busPath, bus, "a lun needs bus scsi or virtio")
	}
	prefix := "sd"
	switch bus {
	case "virtio":
		prefix = "vd"
	case "sata", "scsi":
	default:
		return libvirtxml.DomainDisk{}, errorf(busPath, bus, "unknown disk bus; one of virtio, sata, scsi")
	}
	disk := libvirtxml.DomainDisk{
		Device: device,
		// error_policy stop: an I/O error pauses the guest instead of
		// reaching it (KubeVirt's choice for every disk).
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: src.Format, Cache: spec.Cache, IO: spec.IO, ErrorPolicy: "stop"},
		Target: &libvirtxml.DomainDiskTarget{Dev: diskDevName(prefix, counters[prefix]), Bus: bus},
		Serial: spec.Serial,
		Alias:  Alias(spec.Name),
	}
	if device != "cdrom" {
		// Guest discards (TRIM) reach the source, as KubeVirt renders
		// every disk and lun.
		disk.Driver.Discard = "unmap"
	}
	if bus == "virtio" {
		disk.Model = VirtioModel(vmi)
		if q := vmi.Spec.Domain.Devices.BlockMultiQueue; q != nil && *q {
			disk.Driver.Queues = uintp(uint(vmi.VCPUs()))
		}
	}
	if bus == "scsi" {
		// On the one virtio-scsi controller, unit = the disk's index
		// among the sd disks (KubeVirt's).
		disk.Address = &libvirtxml.DomainAddress{Drive: &libvirtxml.DomainAddressDrive{
			Controller: uintp(0), Bus: uintp(0), Unit: uintp(uint(counters[prefix])),
		}}
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
	if spec.Shareable != nil && *spec.Shareable && device == "disk" {
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
			return libvirtxml.DomainDisk{}, fieldError(path+".disk.pciAddress", pci, err)
		}
		disk.Address = addr
	}
	return disk, nil
}

// ErrNoDirectIO is matched by the error of [SetDriverModes] for a disk
// whose cache mode is none on a file system without O_DIRECT.
var ErrNoDirectIO = errors.New("cache mode none needs O_DIRECT, which the file system of the disk source does not support")

// SetDriverModes completes a disk's cache and I/O modes as KubeVirt's
// preStartHook does once the disk sources exist; directIO reports whether
// the source (and its backing file) can be opened with O_DIRECT,
// preallocated whether a file source is fully allocated.
//
//   - cache: the VMI's when it set one; otherwise none when directIO,
//     else writethrough. Cache none without directIO is an error
//     (wrapping [ErrNoDirectIO]).
//   - io: the VMI's when it set one; otherwise native when the cache is
//     none and the source is a block device or a preallocated file;
//     otherwise unset (QEMU's threads), as KubeVirt leaves it.
func SetDriverModes(disk *libvirtxml.DomainDisk, directIO, preallocated bool) error {
	if disk.Driver == nil {
		disk.Driver = &libvirtxml.DomainDiskDriver{Name: "qemu"}
	}
	d := disk.Driver
	switch {
	case d.Cache == "none" && !directIO:
		name := ""
		if disk.Alias != nil {
			name = strings.TrimPrefix(disk.Alias.Name, UserAliasPrefix)
		}
		return fmt.Errorf("domxml: disk %q: %w", name, ErrNoDirectIO)
	case d.Cache == "" && directIO:
		d.Cache = "none"
	case d.Cache == "":
		d.Cache = "writethrough"
	}
	block := disk.Source != nil && disk.Source.Block != nil
	if d.IO == "" && d.Cache == "none" && (block || preallocated) {
		d.IO = "native"
	}
	return nil
}
