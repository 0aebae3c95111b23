package domxml_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

var writeRows = flag.Bool("kubevirt.write-rows", false, "TestFieldTable writes one manifest per rendered row to testdata/kubevirt/manifests (KubeVirt v0.53.2 renders them outside the repository: testdata/kubevirt/README.md)")

func ptr[T any](v T) *T { return &v }

// fieldRow is one row of the field table in doc.go: a field of the VMI
// subset and what domxml does with it.
type fieldRow struct {
	path   string
	status string // "rendered", "refused" or "n/a"
	// set puts the field in the base VMI (rendered and n/a rows).
	set func(v *api.VMI)
	// manifest is the whole manifest of a refused row (the field is
	// not in virtnet's types).
	manifest string
	// want are element paths (see elements) that exist in the domain
	// with the field and not without it, or whose attributes change; a
	// "path=text" entry also checks the element's description contains
	// text.
	want []string
	// opts are the Options the row needs.
	opts domxml.Options
}

func disk(name string, d api.Disk, vol api.Volume) func(*api.VMI) {
	return func(v *api.VMI) {
		d.Name, vol.Name = name, name
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, d)
		v.Spec.Volumes = append(v.Spec.Volumes, vol)
	}
}

var cpuset = domxml.Options{CPUSet: []int{2, 3, 4, 5, 6, 7, 8, 9}}

// fieldRows lists every field of api.VMI that reaches the domain, and the
// KubeVirt features virtnet refuses. doc.go's table must list the same
// paths with the same status (TestFieldTable).
var fieldRows = []fieldRow{
	{path: "metadata.name", status: "rendered", set: func(v *api.VMI) { v.Metadata.Name = "other" }, want: []string{"domain/name=default_other"}},
	{path: "metadata.namespace", status: "rendered", set: func(v *api.VMI) { v.Metadata.Namespace = "ns2" }, want: []string{"domain/name=ns2_row"}},
	{path: "metadata.uid", status: "rendered", set: func(v *api.VMI) { v.Metadata.UID = "11111111-2222-4333-8444-555555555555" },
		want: []string{"domain/devices/serial[0]/source=11111111-2222-4333-8444-555555555555/virt-serial0", "domain/devices/graphics/listen"}},
	{path: "metadata.annotations[kubevirt.io/memfd]", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Memory = &api.Memory{Hugepages: &api.Hugepages{PageSize: "2Mi"}}
		v.Metadata.Annotations = map[string]string{domxml.MemfdAnnotation: "false"}
	}, want: []string{"domain/memoryBacking/hugepages"}},
	{path: "spec.domain.resources.requests.memory", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Resources.Requests = map[string]string{"memory": "1Gi"} }, want: []string{"domain/memory=1073741824"}},
	{path: "spec.domain.resources.limits.memory", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Resources.Limits = map[string]string{"memory": "2Gi"} }, want: []string{"domain/memory=2147483648"}},
	{path: "spec.domain.resources.requests.cpu", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Resources.Requests = map[string]string{"cpu": "4"} }, want: []string{"domain/vcpu=4", `domain/cpu/topology=sockets="4"`}},
	{path: "spec.domain.resources.limits.cpu", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Resources.Requests = map[string]string{"cpu": "1500m"}
		v.Spec.Domain.Resources.Limits = map[string]string{"cpu": "1500m"}
	}, want: []string{"domain/vcpu=2", `domain/cpu/topology=sockets="2"`}},
	{path: "spec.domain.memory.guest", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Memory = &api.Memory{Guest: "256Mi"} }, want: []string{"domain/memory=268435456"}},
	{path: "spec.domain.memory.hugepages.pageSize", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Memory = &api.Memory{Guest: "1Gi", Hugepages: &api.Hugepages{PageSize: "2Mi"}}
	}, want: []string{"domain/memoryBacking/hugepages", `domain/memoryBacking/source=memfd`, `domain/cpu/numa/cell=memory="1048576"`}},
	{path: "spec.domain.cpu.cores", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.CPU = &api.CPU{Cores: 2} }, want: []string{"domain/vcpu=2", `domain/cpu/topology=cores="2"`}},
	{path: "spec.domain.cpu.sockets", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.CPU = &api.CPU{Sockets: 3} }, want: []string{"domain/vcpu=3"}},
	{path: "spec.domain.cpu.threads", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.CPU = &api.CPU{Threads: 2} }, want: []string{"domain/vcpu=2", `domain/cpu/topology=threads="2"`}},
	{path: "spec.domain.cpu.model", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.CPU = &api.CPU{Model: "Skylake-Server"} }, want: []string{`domain/cpu=mode="custom"`, "domain/cpu/model=Skylake-Server"}},
	{path: "spec.domain.cpu.features", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.CPU = &api.CPU{Features: []api.CPUFeature{{Name: "vmx"}, {Name: "pcid", Policy: "disable"}}}
	}, want: []string{`domain/cpu/feature[vmx]=policy="require"`, `domain/cpu/feature[pcid]=policy="disable"`}},
	{path: "spec.domain.cpu.dedicatedCpuPlacement", status: "rendered", opts: cpuset, set: func(v *api.VMI) {
		v.Spec.Domain.CPU = &api.CPU{Cores: 2, DedicatedCPUPlacement: true}
	}, want: []string{`domain/cputune/vcpupin[0]=cpuset="2"`, `domain/cputune/vcpupin[1]=cpuset="3"`, `domain/features/kvm/hint-dedicated=state="on"`}},
	{path: "spec.domain.cpu.isolateEmulatorThread", status: "rendered", opts: cpuset, set: func(v *api.VMI) {
		v.Spec.Domain.CPU = &api.CPU{Cores: 2, DedicatedCPUPlacement: true, IsolateEmulatorThread: true}
	}, want: []string{`domain/cputune/emulatorpin=cpuset="4"`}},
	{path: "spec.domain.firmware.uuid", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Firmware = &api.Firmware{UUID: "5d307ca9-b3ef-428c-8861-06e72d69f223"} },
		want: []string{"domain/uuid=5d307ca9-b3ef-428c-8861-06e72d69f223", "domain/sysinfo/system/entry[uuid]=5d307ca9-b3ef-428c-8861-06e72d69f223"}},
	{path: "spec.domain.firmware.serial", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Firmware = &api.Firmware{Serial: "SN-1"} }, want: []string{"domain/sysinfo/system/entry[serial]=SN-1"}},
	{path: "spec.domain.firmware.bootloader.bios.useSerial", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Firmware = &api.Firmware{Bootloader: &api.Bootloader{BIOS: &api.BIOS{UseSerial: ptr(true)}}}
	}, want: []string{`domain/os/bios=useserial="yes"`}},
	{path: "spec.domain.firmware.bootloader.efi.secureBoot", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Firmware = &api.Firmware{Bootloader: &api.Bootloader{EFI: &api.EFI{SecureBoot: ptr(false)}}}
	}, want: []string{`domain/os/loader=secure="no"`, "domain/os/nvram"}},
	{path: "spec.domain.machine.type", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Machine = &api.Machine{Type: "pc-q35-7.2"} }, want: []string{`domain/os/type=machine="pc-q35-7.2"`}},
	{path: "spec.domain.features.acpi", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Features = &api.Features{ACPI: api.FeatureState{Enabled: ptr(false)}} }, want: []string{"domain/features/acpi"}},
	{path: "spec.domain.features.apic", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Features = &api.Features{APIC: &api.FeatureState{}} }, want: []string{"domain/features/apic"}},
	{path: "spec.domain.features.smm", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Features = &api.Features{SMM: &api.FeatureState{}} }, want: []string{"domain/features/smm"}},
	{path: "spec.domain.features.hyperv", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Features = &api.Features{HyperV: &api.HyperV{Relaxed: &api.FeatureState{}, VAPIC: &api.FeatureState{}, Spinlocks: &api.Spinlocks{Retries: ptr(uint32(8191))},
			VPIndex: &api.FeatureState{}, Runtime: &api.FeatureState{}, SyNIC: &api.FeatureState{}, SyNICTimer: &api.FeatureState{}, Reset: &api.FeatureState{},
			Frequencies: &api.FeatureState{}, Reenlightenment: &api.FeatureState{}, TLBFlush: &api.FeatureState{}, IPI: &api.FeatureState{}}}
	}, want: []string{`domain/features/hyperv/relaxed=state="on"`, `domain/features/hyperv/spinlocks=retries="8191"`, `domain/features/hyperv/stimer=state="on"`, `domain/features/hyperv/ipi=state="on"`}},
	{path: "spec.domain.clock.utc.offsetSeconds", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Clock = &api.Clock{UTC: &api.ClockUTC{OffsetSeconds: ptr(3600)}} }, want: []string{`domain/clock=adjustment="3600"`}},
	{path: "spec.domain.clock.timezone", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Clock = &api.Clock{Timezone: "Europe/Paris"} }, want: []string{`domain/clock=timezone="Europe/Paris"`}},
	{path: "spec.domain.clock.timer", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Clock = &api.Clock{UTC: &api.ClockUTC{}, Timer: &api.Timer{HPET: &api.TimerAttrs{Present: ptr(false)}, RTC: &api.TimerAttrs{TickPolicy: "catchup"}}}
	}, want: []string{`domain/clock=adjustment="reset"`, `domain/clock/timer[hpet]=name="hpet" present="no"`, `domain/clock/timer[rtc]=tickpolicy="catchup"`}},
	{path: "spec.domain.chassis", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Chassis = &api.Chassis{Manufacturer: "ACME", Asset: "A-1"} },
		want: []string{"domain/sysinfo/chassis/entry[manufacturer]=ACME", "domain/sysinfo/chassis/entry[asset]=A-1"}},
	{path: "spec.domain.devices.disks[].disk.bus", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{}}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{`domain/devices/disk[ua-d]/target=bus="sata" dev="sda"`}},
	{path: "spec.domain.devices.disks[].disk.readonly", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio", ReadOnly: true}}, api.Volume{PersistentVolumeClaim: &api.PVCSource{ClaimName: "c"}}),
		want: []string{"domain/devices/disk[ua-d]/readonly"}},
	{path: "spec.domain.devices.disks[].disk.pciAddress", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio", PciAddress: "0000:05:00.0"}}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{`domain/devices/disk[ua-d]/address=bus="0x05"`}},
	{path: "spec.domain.devices.disks[].cdrom", status: "rendered", set: disk("d", api.Disk{CDRom: &api.CDRomTarget{}}, api.Volume{HostDisk: &api.HostDiskSource{Path: "/srv/iso/install.iso"}}),
		want: []string{`domain/devices/disk[ua-d]=device="cdrom"`, `domain/devices/disk[ua-d]/target=bus="sata" dev="sda" tray="closed"`, "domain/devices/disk[ua-d]/readonly",
			"domain/devices/disk[ua-d]/source=/var/run/kubevirt-private/vmi-disks/d/install.iso"}},
	{path: "spec.domain.devices.disks[].lun", status: "rendered", opts: domxml.Options{BlockVolumes: map[string]bool{"d": true}},
		set:  disk("d", api.Disk{LUN: &api.LUNTarget{Bus: "scsi"}}, api.Volume{PersistentVolumeClaim: &api.PVCSource{ClaimName: "c"}}),
		want: []string{`domain/devices/disk[ua-d]=device="lun"`, `domain/devices/disk[ua-d]/address=controller="0"`, `domain/devices/disk[ua-d]/driver=discard="unmap"`}},
	{path: "spec.domain.devices.disks[].bootOrder", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}, BootOrder: ptr(uint(1))}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{`domain/devices/disk[ua-d]/boot=order="1"`}},
	{path: "spec.domain.devices.disks[].serial", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}, Serial: "D1"}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{"domain/devices/disk[ua-d]/serial=D1"}},
	{path: "spec.domain.devices.disks[].cache", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}, Cache: "writethrough"}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{`domain/devices/disk[ua-d]/driver=cache="writethrough"`}},
	{path: "spec.domain.devices.disks[].io", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}, IO: "threads"}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{`domain/devices/disk[ua-d]/driver=io="threads"`}},
	{path: "spec.domain.devices.disks[].shareable", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}, Shareable: ptr(true)}, api.Volume{PersistentVolumeClaim: &api.PVCSource{ClaimName: "c"}}),
		want: []string{"domain/devices/disk[ua-d]/shareable", `domain/devices/disk[ua-d]/driver=cache="none"`}},
	{path: "spec.domain.devices.autoattachSerialConsole", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.AutoattachSerialConsole = ptr(false) }, want: []string{"domain/devices/serial[0]", "domain/devices/console[0]"}},
	{path: "spec.domain.devices.autoattachGraphicsDevice", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr(false) }, want: []string{"domain/devices/graphics", "domain/devices/video"}},
	{path: "spec.domain.devices.autoattachMemBalloon", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.AutoattachMemBalloon = ptr(false) }, want: []string{`domain/devices/memballoon=model="none"`}},
	{path: "spec.domain.devices.disableHotplug", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.DisableHotplug = true }, want: []string{"domain/devices/controller[scsi/0]"}},
	{path: "spec.domain.devices.blockMultiQueue", status: "rendered", set: func(v *api.VMI) {
		v.Spec.Domain.Devices.BlockMultiQueue = ptr(true)
		v.Spec.Domain.CPU = &api.CPU{Cores: 3}
	}, want: []string{`domain/devices/disk[ua-root]/driver=queues="3"`}},
	{path: "spec.domain.devices.rng", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.Rng = &struct{}{} }, want: []string{"domain/devices/rng/backend=/dev/urandom"}},
	{path: "spec.domain.devices.tpm", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.TPM = &struct{}{} }, want: []string{`domain/devices/tpm=model="tpm-tis"`}},
	{path: "spec.domain.devices.useVirtioTransitional", status: "rendered", set: func(v *api.VMI) { v.Spec.Domain.Devices.UseVirtioTransitional = ptr(true) }, want: []string{`domain/devices/disk[ua-root]=model="virtio-transitional"`}},
	{path: "spec.volumes[].containerDisk", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{ContainerDisk: &api.ContainerDiskSource{Image: "quay.io/containerdisks/centos"}}),
		want: []string{"domain/devices/disk[ua-d]/backingStore/source=/var/run/kubevirt/container-disks/disk_1.img", "domain/devices/disk[ua-d]/source=disk-data/d/disk.qcow2"}},
	{path: "spec.volumes[].persistentVolumeClaim", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{PersistentVolumeClaim: &api.PVCSource{ClaimName: "c"}}),
		want: []string{"domain/devices/disk[ua-d]/source=/var/run/kubevirt-private/vmi-disks/d/disk.img"}},
	{path: "spec.volumes[].dataVolume", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{DataVolume: &api.DataVolumeSource{Name: "dv"}}),
		want: []string{"domain/devices/disk[ua-d]/source=/var/run/kubevirt-private/vmi-disks/d/disk.img"}},
	{path: "spec.volumes[].emptyDisk", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{EmptyDisk: &api.EmptyDiskSource{Capacity: "1Gi"}}),
		want: []string{"domain/devices/disk[ua-d]/source=/var/run/libvirt/empty-disks/d.qcow2"}},
	{path: "spec.volumes[].hostDisk", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{HostDisk: &api.HostDiskSource{Path: "/data/d.img", Type: "Disk"}}),
		want: []string{"domain/devices/disk[ua-d]/source=/var/run/kubevirt-private/vmi-disks/d/d.img"}},
	{path: "spec.volumes[].cloudInitNoCloud", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{CloudInitNoCloud: &api.CloudInitSource{UserData: "#cloud-config"}}),
		want: []string{"domain/devices/disk[ua-d]/source=noCloud.iso"}},
	{path: "spec.volumes[].cloudInitConfigDrive", status: "rendered", set: disk("d", api.Disk{Disk: &api.DiskTarget{Bus: "virtio"}}, api.Volume{CloudInitConfigDrive: &api.CloudInitSource{UserData: "#cloud-config"}}),
		want: []string{"domain/devices/disk[ua-d]/source=configdrive.iso"}},
	{path: "spec.volumes[].sysprep", status: "rendered", set: disk("d", api.Disk{CDRom: &api.CDRomTarget{}}, api.Volume{Sysprep: &api.SysprepSource{ConfigMap: &api.LocalObjectReference{Name: "u"}}}),
		want: []string{"domain/devices/disk[ua-d]/source=sysprep-disks/d.iso"}},

	// Not the domain's: other packages use them; the domain is the same
	// with and without them.
	{path: "metadata.labels", status: "n/a", set: func(v *api.VMI) { v.Metadata.Labels = map[string]string{"a": "b"} }},
	{path: "spec.hostname", status: "n/a", set: func(v *api.VMI) { v.Spec.Hostname = "h" }},
	{path: "spec.subdomain", status: "n/a", set: func(v *api.VMI) { v.Spec.Subdomain = "s" }},
	{path: "spec.networks", status: "n/a", set: func(v *api.VMI) {
		v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{VMNetworkCIDR: "10.1.0.0/24"}}}
		v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Masquerade: &struct{}{}}}
	}},
	{path: "spec.domain.devices.interfaces", status: "n/a", set: func(v *api.VMI) {
		v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
		v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Masquerade: &struct{}{}, Tag: "t", Model: "e1000", MacAddress: "02:00:00:00:00:02"}}
	}},
	{path: "spec.domain.devices.interfaces[].tag", status: "n/a", set: func(v *api.VMI) {
		v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
		v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Bridge: &struct{}{}, Tag: "uplink"}}
	}},
	{path: "spec.domain.devices.autoattachPodInterface", status: "n/a", set: func(v *api.VMI) { v.Spec.Domain.Devices.AutoattachPodInterface = ptr(false) }},
	{path: "spec.domain.devices.networkInterfaceMultiqueue", status: "n/a", set: func(v *api.VMI) { v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = ptr(true) }},

	// Refused with the field's path.
	{path: "spec.domain.ioThreadsPolicy", status: "refused", manifest: "spec:\n  domain:\n    ioThreadsPolicy: auto\n    devices: {}\n"},
	{path: "spec.domain.launchSecurity", status: "refused", manifest: "spec:\n  domain:\n    launchSecurity: {sev: {}}\n    devices: {}\n"},
	{path: "spec.domain.devices.gpus", status: "refused", manifest: "spec:\n  domain:\n    devices: {gpus: [{name: g, deviceName: nvidia.com/T4}]}\n"},
	{path: "spec.domain.devices.hostDevices", status: "refused", manifest: "spec:\n  domain:\n    devices: {hostDevices: [{name: h, deviceName: x/y}]}\n"},
	{path: "spec.domain.devices.filesystems", status: "refused", manifest: "spec:\n  domain:\n    devices: {filesystems: [{name: f, virtiofs: {}}]}\n"},
	{path: "spec.domain.devices.sound", status: "refused", manifest: "spec:\n  domain:\n    devices: {sound: {name: s}}\n"},
	{path: "spec.domain.devices.watchdog", status: "refused", manifest: "spec:\n  domain:\n    devices: {watchdog: {name: w, i6300esb: {}}}\n"},
	{path: "spec.domain.devices.clientPassthrough", status: "refused", manifest: "spec:\n  domain:\n    devices: {clientPassthrough: {}}\n"},
	{path: "spec.domain.devices.inputs", status: "refused", manifest: "spec:\n  domain:\n    devices: {inputs: [{name: t, type: tablet, bus: usb}]}\n"},
	{path: "spec.volumes[].others", status: "refused", manifest: "spec:\n  domain:\n    devices: {}\n  volumes: [{name: c, configMap: {name: c}}]\n"},
}

const rowBase = `
kind: VirtualMachineInstance
metadata: {name: row, namespace: default, uid: 00000000-0000-4000-8000-0000000000a1}
spec:
  domain:
    devices:
      disks: [{name: root, disk: {bus: virtio}}]
  volumes: [{name: root, containerDisk: {image: quay.io/containerdisks/fedora}}]
`

func rowVMI(t *testing.T, r fieldRow) *api.VMI {
	vmi, err := api.Decode([]byte(rowBase))
	require.NoError(t, err)
	vmi.Spec.Domain.Firmware = &api.Firmware{UUID: standaloneUUID}
	r.set(vmi)
	// KubeVirt refuses a VMI without memory; give the rows that set none
	// some, as requests.memory.
	if res := &vmi.Spec.Domain.Resources; res.Requests["memory"] == "" && res.Limits["memory"] == "" &&
		(vmi.Spec.Domain.Memory == nil || vmi.Spec.Domain.Memory.Guest == "" && vmi.Spec.Domain.Memory.Hugepages == nil) {
		if res.Requests == nil {
			res.Requests = map[string]string{}
		}
		res.Requests["memory"] = "64Mi"
	}
	if vmi.Spec.Domain.Firmware.UUID == "" {
		vmi.Spec.Domain.Firmware.UUID = standaloneUUID
	}
	api.SetDefaults(vmi)
	require.NoError(t, api.Validate(vmi))
	return vmi
}

func buildElements(t *testing.T, vmi *api.VMI, opts domxml.Options) map[string]string {
	dom, err := domxml.Build(vmi, opts)
	require.NoError(t, err)
	x, err := dom.Marshal()
	require.NoError(t, err)
	n, err := parseXML([]byte(x))
	require.NoError(t, err)
	return elements(n)
}

var docRowRE = regexp.MustCompile(`^//\t(\S+)\s+(rendered|refused|n/a)\b`)

// TestFieldTable checks every row of the field table: a rendered field
// changes the elements it names, an n/a field leaves the domain as it is,
// a refused field is refused by its path; and doc.go's table lists
// exactly these rows.
func TestFieldTable(t *testing.T) {
	base := buildElements(t, rowVMI(t, fieldRow{set: func(*api.VMI) {}}), domxml.Options{})
	seen := map[string]string{}
	for i, r := range fieldRows {
		seen[r.path] = r.status
		t.Run(r.path, func(t *testing.T) {
			switch r.status {
			case "refused":
				vmi, err := api.Decode([]byte("kind: VirtualMachineInstance\nmetadata: {name: row}\n" + r.manifest))
				require.NoError(t, err)
				api.SetDefaults(vmi)
				_, err = domxml.Build(vmi, domxml.Options{})
				require.ErrorContains(t, err, strings.TrimSuffix(strings.ReplaceAll(r.path, "[]", "[0]"), ".others"))
			case "n/a":
				got := buildElements(t, rowVMI(t, r), r.opts)
				require.Equal(t, base, got, "%s must not change the domain", r.path)
			case "rendered":
				vmi := rowVMI(t, r)
				got := buildElements(t, vmi, r.opts)
				for _, w := range r.want {
					path, text, _ := strings.Cut(w, "=")
					desc, ok := got[path]
					if !ok {
						_, inBase := base[path]
						require.True(t, inBase, "%s: no element %s", r.path, path)
						continue // the field removes the element
					}
					require.Contains(t, desc, text, "%s: element %s", r.path, path)
					if text == "" {
						b, inBase := base[path]
						require.True(t, !inBase || b != desc, "%s: element %s is the same without the field", r.path, path)
					} else {
						require.NotContains(t, base[path], text, "%s: %s has %q without the field", r.path, path, text)
					}
				}
				// A block PVC needs the converter's IsBlockPVC, which the
				// script does not give: that row is not compared.
				if *writeRows && len(r.opts.BlockVolumes) == 0 {
					writeRowManifest(t, i, vmi)
				}
			default:
				t.Fatalf("status %q", r.status)
			}
		})
	}
	// The interfaces' and networks' keys are checked through both phases
	// (TestNetFieldTable); doc.go lists them in the same table.
	for _, r := range netRows {
		seen[r.path] = r.status
	}
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	documented := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := docRowRE.FindStringSubmatch(line); m != nil {
			documented[m[1]] = m[2]
		}
	}
	require.Equal(t, seen, documented, "doc.go's field table and fieldRows differ")
}

// writeRowManifest writes the row's VMI as JSON (which is YAML) for
// KubeVirt's converter.
func writeRowManifest(t *testing.T, i int, vmi *api.VMI) {
	vmi.Metadata.Name = fmt.Sprintf("row-%02d", i)
	vmi.Kind = api.KindVMI
	b, err := json.MarshalIndent(struct {
		APIVersion string `json:"apiVersion"`
		*api.VMI
	}{"kubevirt.io/v1", vmi}, "", "  ")
	require.NoError(t, err)
	dir := filepath.Join("testdata", "kubevirt", "manifests")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("row-%02d.yaml", i)), append(b, '\n'), 0o644))
}
