package domxml

import (
	"fmt"
	"path/filepath"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

// KubeVirt's directories inside virt-launcher; the defaults of [Options].
const (
	// DefaultPrivateDir holds PVC mounts (vmi-disks/<vol>/disk.img), the
	// EFI variable stores and the VNC socket.
	DefaultPrivateDir = "/var/run/kubevirt-private"
	// DefaultEphemeralDir holds the container-disk overlays
	// (disk-data/<vol>/disk.qcow2) and, by default, the cloud-init and
	// sysprep ISOs.
	DefaultEphemeralDir = "/var/run/kubevirt-ephemeral-disks"
	// DefaultContainerDiskDir is where the container disks appear,
	// disk_<volume index>.img.
	DefaultContainerDiskDir = "/var/run/kubevirt/container-disks"
	// DefaultEmptyDiskDir holds emptyDisk images, <vol>.qcow2.
	DefaultEmptyDiskDir = "/var/run/libvirt/empty-disks"
	// DefaultOVMFDir is Debian's OVMF directory (package ovmf).
	DefaultOVMFDir = "/usr/share/OVMF"
)

// OVMF file names in [Options.OVMFDir] (Debian 12's ovmf package).
const (
	OVMFCodeSecureBoot = "OVMF_CODE_4M.secboot.fd"
	OVMFVarsSecureBoot = "OVMF_VARS_4M.ms.fd"
	OVMFCode           = "OVMF_CODE_4M.fd"
	OVMFVars           = "OVMF_VARS_4M.fd"
)

// DefaultMemory is the guest memory of a VMI that states none (64 MiB).
const DefaultMemory = 64 << 20

// Options are the environment of the domain: directories and the
// interface hook. The zero value is KubeVirt's virt-launcher: each empty
// directory means KubeVirt's path inside a launcher pod (the Default*
// constants above), which exist there and nowhere else. A program that is
// not a KubeVirt launcher sets the four directories to its own (under one
// working directory, say, as examples/launcher does); the domain names
// the paths, the preStartHook (phase2/prestart) creates what it writes
// under them and reads the disks from them.
type Options struct {
	// PrivateDir holds the persistentVolumeClaim, dataVolume and hostDisk
	// volumes (<PrivateDir>/vmi-disks/<volume>/disk.img, where the
	// launcher's pod mounts them), the serial console and VNC sockets
	// (<PrivateDir>/<uid>/) and, by default, the EFI variable stores
	// (NVRAMDir). Empty means [DefaultPrivateDir]
	// (/var/run/kubevirt-private).
	PrivateDir string
	// EphemeralDir holds each containerDisk's writable qcow2 overlay
	// (<EphemeralDir>/disk-data/<volume>/disk.qcow2, created by the
	// preStartHook's storage step) and, by default, the cloud-init images
	// (CloudInitDir). Empty means [DefaultEphemeralDir]
	// (/var/run/kubevirt-ephemeral-disks).
	EphemeralDir string
	// ContainerDiskDir is where each containerDisk's read-only raw image
	// is, <ContainerDiskDir>/disk_<index in spec.volumes>.img (the image
	// a containerDisk container serves; the hook does not create it: a
	// VMI with a containerDisk needs the file there). Empty means
	// [DefaultContainerDiskDir] (/var/run/kubevirt/container-disks).
	ContainerDiskDir string
	// EmptyDiskDir holds the emptyDisk images, <EmptyDiskDir>/<volume>.qcow2
	// (created by the storage step). Empty means [DefaultEmptyDiskDir]
	// (/var/run/libvirt/empty-disks).
	EmptyDiskDir string
	// CloudInitDir is the Dir of the cloudinit.Builder that writes the
	// cloud-init and sysprep ISOs (see [ISOPath]):
	// <CloudInitDir>/cloud-init-data/<namespace>/<name>/noCloud.iso (or
	// configdrive.iso) and <CloudInitDir>/sysprep-disks/<volume>.iso.
	// Empty means EphemeralDir, where KubeVirt's virt-launcher puts the
	// cloud-init ISOs.
	CloudInitDir string
	// OVMFDir holds the EFI firmware (the OVMF* files above) of a VMI
	// with spec.domain.firmware.bootloader.efi; empty means
	// [DefaultOVMFDir] (Debian's /usr/share/OVMF). It is read, never
	// written.
	OVMFDir string
	// NVRAMDir holds each EFI VM's variable store <name>_VARS.fd; empty
	// means <PrivateDir>/libvirt/qemu/nvram.
	NVRAMDir string
	// BlockVolumes names the persistentVolumeClaim and dataVolume volumes
	// whose claim is in volumeMode Block: they are rendered as
	// <disk type='block'> on /dev/<volume> (where KubeVirt maps block
	// PVCs) instead of a file. The caller knows the claim's mode; the VMI
	// does not say it.
	BlockVolumes map[string]bool
	// SMBIOS is the cluster's SMBIOS system information (KubeVirt's
	// smbios configuration, which virt-handler passes to every
	// launcher); nil means [DefaultSMBIOS].
	SMBIOS *SMBIOS
	// CPUSet is the pod's cpuset (the CPUs its cgroup may use, in the
	// order vCPUs are pinned to them), needed by a VMI with
	// spec.domain.cpu.dedicatedCpuPlacement.
	CPUSet []int
	// HotplugPorts is the number of spare pcie-root-port controllers a
	// q35 domain gets beyond what its devices need, for devices
	// hot-plugged into the running guest (a NIC: phase2.Sync, which
	// refuses an attach the domain has no spare port for): 0
	// ([HotplugPortsKubeVirt], the default) the count KubeVirt 1.x
	// (v1.9.0) reserves ([KubeVirtHotplugPorts]: at least 3, 6 for a
	// guest of more than 2 GiB), [HotplugPortsNone] none (KubeVirt
	// v0.53's domain: no hot-plug), a positive n that many. See
	// [ReserveHotplugPorts]; [SpareRootPorts] reads it back. Other
	// machines than q35 have no root ports and are not affected.
	HotplugPorts int
	// Interfaces, when set, adds the VMI's network devices to the domain;
	// Build calls it after every other device and before sizing the PCI
	// controllers (phase2.Domain sets it).
	Interfaces func(dom *libvirtxml.Domain) error
}

// SMBIOS is the system information every domain carries.
type SMBIOS struct {
	Manufacturer, Family, Product, SKU, Version string
}

// DefaultSMBIOS is KubeVirt's default smbios configuration.
func DefaultSMBIOS() SMBIOS {
	return SMBIOS{Manufacturer: "KubeVirt", Family: "KubeVirt", Product: "None"}
}

// WithDefaults returns o with every empty directory and a nil SMBIOS set
// to its default (the values [Build] and [DiskPath] use).
func (o Options) WithDefaults() Options {
	if o.SMBIOS == nil {
		d := DefaultSMBIOS()
		o.SMBIOS = &d
	}
	def := func(s *string, d string) {
		if *s == "" {
			*s = d
		}
	}
	def(&o.PrivateDir, DefaultPrivateDir)
	def(&o.EphemeralDir, DefaultEphemeralDir)
	def(&o.ContainerDiskDir, DefaultContainerDiskDir)
	def(&o.EmptyDiskDir, DefaultEmptyDiskDir)
	def(&o.CloudInitDir, o.EphemeralDir)
	def(&o.OVMFDir, DefaultOVMFDir)
	def(&o.NVRAMDir, filepath.Join(o.PrivateDir, "libvirt", "qemu", "nvram"))
	return o
}

// DiskSource is where a volume's data is and in which format.
type DiskSource struct {
	// Type is "file" or "block".
	Type string
	// Path is the file or block device.
	Path string
	// Format is the qemu driver type, "raw" or "qcow2".
	Format string
	// Backing, for a container disk, is the read-only image under the
	// qcow2 overlay Path (storage prep creates the overlay with
	// `qemu-img create -f qcow2 -F raw -b <Backing> <Path>`).
	Backing string
	// ReadOnly is set when the source itself is read-only (a read-only
	// PVC).
	ReadOnly bool
}

// DiskPath returns the source of the volume at index i of spec.volumes:
//
//   - containerDisk: a qcow2 overlay <EphemeralDir>/disk-data/<vol>/disk.qcow2
//     on the raw image <ContainerDiskDir>/disk_<i>.img (i counts every
//     volume, as KubeVirt does);
//   - persistentVolumeClaim, dataVolume: <PrivateDir>/vmi-disks/<vol>/disk.img,
//     or /dev/<vol> when the volume is in [Options.BlockVolumes];
//   - emptyDisk: <EmptyDiskDir>/<vol>.qcow2;
//   - hostDisk: <PrivateDir>/vmi-disks/<vol>/<file name of its path>, raw,
//     where virt-handler mounts the host directory;
//   - cloudInitNoCloud, cloudInitConfigDrive, sysprep: the ISO
//     [ISOPath] names under [Options.CloudInitDir].
func DiskPath(vmi *api.VMI, i int, opts Options) (DiskSource, error) {
	o := opts.WithDefaults()
	vol := &vmi.Spec.Volumes[i]
	switch {
	case vol.ContainerDisk != nil:
		return DiskSource{
			Type:    "file",
			Path:    filepath.Join(o.EphemeralDir, "disk-data", vol.Name, "disk.qcow2"),
			Format:  "qcow2",
			Backing: filepath.Join(o.ContainerDiskDir, fmt.Sprintf("disk_%d.img", i)),
		}, nil
	case vol.PersistentVolumeClaim != nil || vol.DataVolume != nil:
		ro := vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly
		if o.BlockVolumes[vol.Name] {
			return DiskSource{Type: "block", Path: "/dev/" + vol.Name, Format: "raw", ReadOnly: ro}, nil
		}
		return DiskSource{Type: "file", Path: filepath.Join(o.PrivateDir, "vmi-disks", vol.Name, "disk.img"), Format: "raw", ReadOnly: ro}, nil
	case vol.EmptyDisk != nil:
		return DiskSource{Type: "file", Path: filepath.Join(o.EmptyDiskDir, vol.Name+".qcow2"), Format: "qcow2"}, nil
	case vol.HostDisk != nil:
		// virt-handler mounts the host path's directory into the
		// launcher at <PrivateDir>/vmi-disks/<volume>.
		return DiskSource{Type: "file", Path: filepath.Join(o.PrivateDir, "vmi-disks", vol.Name, filepath.Base(vol.HostDisk.Path)), Format: "raw"}, nil
	case vol.CloudInitNoCloud != nil || vol.CloudInitConfigDrive != nil || vol.Sysprep != nil:
		p, ok := ISOPath(o.CloudInitDir, vmi, *vol)
		if !ok {
			return DiskSource{}, fmt.Errorf("domxml: spec.volumes[%d]: %w %q: namespace, name or volume cannot be a path element", i, ErrVolume, vol.Name)
		}
		// Not read-only: KubeVirt leaves the images writable (a guest
		// sees a cdrom read-only anyway).
		return DiskSource{Type: "file", Path: p, Format: "raw"}, nil
	}
	return DiskSource{}, fmt.Errorf("domxml: spec.volumes[%d]: %w %q: no volume source virtnet renders", i, ErrVolume, vol.Name)
}

// File names of the cloud-init images under
// <dir>/cloud-init-data/<namespace>/<name>/ (KubeVirt's).
const (
	NoCloudISO     = "noCloud.iso"
	ConfigDriveISO = "configdrive.iso"
)

// ISOPath is the image of the cloudInitNoCloud, cloudInitConfigDrive or
// sysprep volume vol of vmi under dir (the cloudinit.Builder's Dir, the
// domain's [Options.CloudInitDir]):
//
//   - <dir>/cloud-init-data/<namespace>/<name>/noCloud.iso (or
//     configdrive.iso), one per VMI and kind, which is why a VMI has at
//     most one volume of each cloud-init kind (api.Validate);
//   - <dir>/sysprep-disks/<volume>.iso.
//
// It is false for a volume of another kind, or whose namespace, name or
// volume name cannot be one path element. It builds nothing, so the domain
// XML names the disk source before the images exist; the writer and the
// domain use this one function.
func ISOPath(dir string, vmi *api.VMI, vol api.Volume) (string, bool) {
	switch {
	case vol.Sysprep != nil:
		if !safeName(vol.Name) {
			return "", false
		}
		return filepath.Join(dir, "sysprep-disks", vol.Name+".iso"), true
	case vol.CloudInitNoCloud != nil || vol.CloudInitConfigDrive != nil:
		ns, name := vmi.Metadata.Namespace, vmi.Metadata.Name
		if !safeName(ns) || !safeName(name) {
			return "", false
		}
		file := NoCloudISO
		if vol.CloudInitNoCloud == nil {
			file = ConfigDriveISO
		}
		return filepath.Join(dir, "cloud-init-data", ns, name, file), true
	}
	return "", false
}

// safeName reports whether s can be one path element.
func safeName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}
