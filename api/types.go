package api

import (
	"fmt"
	"net"
	"strings"
)

// Kinds of manifest that [Decode] accepts.
const (
	KindVMI = "VirtualMachineInstance"
	KindVM  = "VirtualMachine"
)

// VMI is the part of a KubeVirt VirtualMachineInstance that virtnet reads.
type VMI struct {
	Kind     string     `json:"kind,omitempty"`
	Metadata ObjectMeta `json:"metadata"`
	Spec     VMISpec    `json:"spec"`
	// Status is read for the few fields that change phase1's work; a
	// VirtualMachine's template has none.
	Status VMIStatus `json:"status,omitempty"`

	// Unsupported lists the field paths of KubeVirt features present in the
	// manifest that virtnet does not render (for example
	// "spec.domain.devices.gpus"). It is filled by [Decode], not by JSON.
	Unsupported []string `json:"-"`
	// Unknown lists the field paths that neither KubeVirt's schema
	// (v0.53.2 and v1.9.0) nor virtnet knows, which [DecodeKubeVirt]
	// accepts (at most 50; [Decode] refuses them). Filled by the
	// decoder, not by JSON.
	Unknown []string `json:"-"`

	validated bool // see Validated
}

// Validated reports whether [Validate] (or [Load], which calls it) passed
// the VMI: phase1 takes it without validating it again. A change made
// since is not seen: whoever changes the VMI calls Validate again.
func (v *VMI) Validated() bool { return v.validated }

// VMIStatus is the part of a VMI's status virtnet reads.
type VMIStatus struct {
	// RuntimeUser is the user virt-launcher runs the VM as (0, root, for
	// root VMIs; 107 for non-root ones): see [VMI.NonRoot].
	RuntimeUser uint64 `json:"runtimeUser,omitempty"`
	// MigrationTransport is how the VMI migrates; KubeVirt v0.53 sets
	// [MigrationTransportUnix] on every new VMI, and then no migration
	// port is excluded from the masquerade binding's forwarding.
	MigrationTransport string `json:"migrationTransport,omitempty"`
	// Interfaces is status.interfaces as KubeVirt last reported it (see
	// [InterfaceStatus]). The bridge binding gives the VM the MAC found
	// here when the spec sets none (see [VMI.StatusMAC]).
	Interfaces []InterfaceStatus `json:"interfaces,omitempty"`
}

// InterfaceStatus is one entry of a VMI's status.interfaces, KubeVirt
// v1.9.0's VirtualMachineInstanceNetworkInterface: what virt-handler
// reports of a VM interface (and of guest interfaces the guest agent
// sees that no spec interface has, with an empty Name).
type InterfaceStatus struct {
	// Name is the spec interface's name; empty for a guest-only interface.
	Name string `json:"name,omitempty"`
	// MAC is the interface's MAC address.
	MAC string `json:"mac,omitempty"`
	// IP is the first of IPs.
	IP string `json:"ipAddress,omitempty"`
	// IPs are the interface's addresses, IPv4 ones first.
	IPs []string `json:"ipAddresses,omitempty"`
	// PodInterfaceName is the pod interface the network appears as (set by
	// virt-controller).
	PodInterfaceName string `json:"podInterfaceName,omitempty"`
	// InterfaceName is the guest's name of the interface, from the guest
	// agent.
	InterfaceName string `json:"interfaceName,omitempty"`
	// InfoSource lists where the entry comes from, comma-separated:
	// "domain", "guest-agent", "multus-status".
	InfoSource string `json:"infoSource,omitempty"`
	// QueueCount is the interface's queue count in the domain (1 when the
	// domain sets none).
	QueueCount int32 `json:"queueCount,omitempty"`
	// LinkState is the link state in the domain: "up" or "down".
	LinkState string `json:"linkState,omitempty"`
}

// StatusMAC returns the MAC status.interfaces reports for the interface
// named iface, parsed, and its field path; nil when there is none. A MAC
// that does not parse, or that a spec macAddress could not be (multicast,
// all zero), is a [*FieldError] naming the path.
func (v *VMI) StatusMAC(iface string) (net.HardwareAddr, error) {
	for i, s := range v.Status.Interfaces {
		if s.Name != iface || s.Name == "" {
			continue
		}
		if s.MAC == "" {
			return nil, nil
		}
		hw, err := net.ParseMAC(s.MAC)
		if err != nil || len(hw) != 6 {
			return nil, &FieldError{Path: fmt.Sprintf("status.interfaces[%d].mac", i), Value: s.MAC, Reason: "not a 6-byte MAC address"}
		}
		if why := notUnicast(hw); why != "" {
			return nil, &FieldError{Path: fmt.Sprintf("status.interfaces[%d].mac", i), Value: s.MAC, Reason: why}
		}
		return hw, nil
	}
	return nil, nil
}

// MigrationTransportUnix is status.migrationTransport for a VMI whose
// migration goes over unix sockets (no TCP ports 49152/49153).
const MigrationTransportUnix = "Unix"

// IstioInjectAnnotation is the annotation that asks Istio for a sidecar;
// "true" changes the masquerade binding's NAT rules as in KubeVirt v0.53.
const IstioInjectAnnotation = "sidecar.istio.io/inject"

// NonRootAnnotation marks a VMI that runs as the qemu user (107): KubeVirt
// v0.53's deprecated "kubevirt.io/nonroot", read for any value.
const NonRootAnnotation = "kubevirt.io/nonroot"

// NonRoot reports whether the VMI runs unprivileged, by KubeVirt v0.53's
// rule (pkg/util IsNonRootVMI): the [NonRootAnnotation] is present, or
// status.runtimeUser is not 0. Phase1 gives the taps of a non-root VMI to
// the qemu user and those of a root VMI to root.
func (v *VMI) NonRoot() bool {
	if _, ok := v.Metadata.Annotations[NonRootAnnotation]; ok {
		return true
	}
	return v.Status.RuntimeUser != 0
}

// Hostname is the guest's host name as KubeVirt derives it, for DHCP's
// option 12 and cloud-init's local-hostname alike: spec.hostname if set,
// else the VMI name cut at its first "." and to 63 bytes (a DNS label), as
// the pod's hostname is.
func (v *VMI) Hostname() string {
	if v.Spec.Hostname != "" {
		return v.Spec.Hostname
	}
	h, _, _ := strings.Cut(v.Metadata.Name, ".")
	return h[:min(len(h), maxHostname)]
}

// maxHostname is the longest host name label derived from a VMI name.
const maxHostname = 63

// ObjectMeta is the subset of Kubernetes object metadata virtnet reads.
type ObjectMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	UID         string            `json:"uid,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// VMISpec is spec of a VirtualMachineInstance.
type VMISpec struct {
	Domain    DomainSpec `json:"domain"`
	Networks  []Network  `json:"networks,omitempty"`
	Volumes   []Volume   `json:"volumes,omitempty"`
	Hostname  string     `json:"hostname,omitempty"`
	Subdomain string     `json:"subdomain,omitempty"`
}

// DomainSpec is spec.domain.
type DomainSpec struct {
	Resources ResourceRequirements `json:"resources,omitempty"`
	Memory    *Memory              `json:"memory,omitempty"`
	CPU       *CPU                 `json:"cpu,omitempty"`
	Firmware  *Firmware            `json:"firmware,omitempty"`
	Machine   *Machine             `json:"machine,omitempty"`
	Features  *Features            `json:"features,omitempty"`
	Clock     *Clock               `json:"clock,omitempty"`
	Chassis   *Chassis             `json:"chassis,omitempty"`
	Devices   Devices              `json:"devices"`
}

// ResourceRequirements is spec.domain.resources; quantities are kept as
// Kubernetes quantity strings ("1Gi", "512M") and parsed by [ParseQuantity].
type ResourceRequirements struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Memory is spec.domain.memory.
type Memory struct {
	Guest     string     `json:"guest,omitempty"`
	Hugepages *Hugepages `json:"hugepages,omitempty"`
}

// Hugepages is spec.domain.memory.hugepages: back the guest memory with
// huge pages of PageSize ("2Mi", "1Gi").
type Hugepages struct {
	PageSize string `json:"pageSize,omitempty"`
}

// CPU is spec.domain.cpu.
type CPU struct {
	Cores    uint32       `json:"cores,omitempty"`
	Sockets  uint32       `json:"sockets,omitempty"`
	Threads  uint32       `json:"threads,omitempty"`
	Model    string       `json:"model,omitempty"`
	Features []CPUFeature `json:"features,omitempty"`
	// DedicatedCPUPlacement pins each vCPU to a CPU of the pod's cpuset.
	DedicatedCPUPlacement bool `json:"dedicatedCpuPlacement,omitempty"`
	// IsolateEmulatorThread, with DedicatedCPUPlacement, pins QEMU's
	// emulator thread to one more CPU of the pod's cpuset.
	IsolateEmulatorThread bool `json:"isolateEmulatorThread,omitempty"`
}

// CPUFeature is one entry of spec.domain.cpu.features; Policy defaults to
// "require" (KubeVirt's default).
type CPUFeature struct {
	Name   string `json:"name"`
	Policy string `json:"policy,omitempty"`
}

// Firmware is spec.domain.firmware.
type Firmware struct {
	UUID       string      `json:"uuid,omitempty"`
	Serial     string      `json:"serial,omitempty"`
	Bootloader *Bootloader `json:"bootloader,omitempty"`
}

// Chassis is spec.domain.chassis: the SMBIOS chassis information.
type Chassis struct {
	Manufacturer string `json:"manufacturer,omitempty"`
	Version      string `json:"version,omitempty"`
	Serial       string `json:"serial,omitempty"`
	Asset        string `json:"asset,omitempty"`
	SKU          string `json:"sku,omitempty"`
}

// Bootloader selects BIOS or EFI; at most one is set.
type Bootloader struct {
	BIOS *BIOS `json:"bios,omitempty"`
	EFI  *EFI  `json:"efi,omitempty"`
}

// BIOS is spec.domain.firmware.bootloader.bios.
type BIOS struct {
	UseSerial *bool `json:"useSerial,omitempty"`
}

// EFI is spec.domain.firmware.bootloader.efi. KubeVirt enables secure boot
// when SecureBoot is unset.
type EFI struct {
	SecureBoot *bool `json:"secureBoot,omitempty"`
}

// Machine is spec.domain.machine.
type Machine struct {
	Type string `json:"type,omitempty"`
}

// FeatureState is a feature that is on unless Enabled is false.
type FeatureState struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether a present feature is enabled.
func (f *FeatureState) On() bool { return f != nil && (f.Enabled == nil || *f.Enabled) }

// Features is spec.domain.features.
type Features struct {
	ACPI   FeatureState  `json:"acpi,omitempty"`
	APIC   *FeatureState `json:"apic,omitempty"`
	SMM    *FeatureState `json:"smm,omitempty"`
	HyperV *HyperV       `json:"hyperv,omitempty"`
}

// HyperV is spec.domain.features.hyperv: the enlightenments virtnet renders.
type HyperV struct {
	Relaxed         *FeatureState `json:"relaxed,omitempty"`
	VAPIC           *FeatureState `json:"vapic,omitempty"`
	Spinlocks       *Spinlocks    `json:"spinlocks,omitempty"`
	VPIndex         *FeatureState `json:"vpindex,omitempty"`
	Runtime         *FeatureState `json:"runtime,omitempty"`
	SyNIC           *FeatureState `json:"synic,omitempty"`
	SyNICTimer      *FeatureState `json:"synictimer,omitempty"`
	Reset           *FeatureState `json:"reset,omitempty"`
	Frequencies     *FeatureState `json:"frequencies,omitempty"`
	Reenlightenment *FeatureState `json:"reenlightenment,omitempty"`
	TLBFlush        *FeatureState `json:"tlbflush,omitempty"`
	IPI             *FeatureState `json:"ipi,omitempty"`
}

// Spinlocks is the hyperv spinlocks enlightenment.
type Spinlocks struct {
	Enabled *bool   `json:"enabled,omitempty"`
	Retries *uint32 `json:"spinlocks,omitempty"`
}

// Clock is spec.domain.clock: UTC (with an offset) or a timezone, and timers.
type Clock struct {
	UTC      *ClockUTC `json:"utc,omitempty"`
	Timezone string    `json:"timezone,omitempty"`
	Timer    *Timer    `json:"timer,omitempty"`
}

// ClockUTC is spec.domain.clock.utc.
type ClockUTC struct {
	OffsetSeconds *int `json:"offsetSeconds,omitempty"`
}

// Timer is spec.domain.clock.timer.
type Timer struct {
	HPET   *TimerAttrs `json:"hpet,omitempty"`
	KVM    *TimerAttrs `json:"kvm,omitempty"`
	PIT    *TimerAttrs `json:"pit,omitempty"`
	RTC    *TimerAttrs `json:"rtc,omitempty"`
	HyperV *TimerAttrs `json:"hyperv,omitempty"`
}

// TimerAttrs are the attributes of one timer.
type TimerAttrs struct {
	Present    *bool  `json:"present,omitempty"`
	TickPolicy string `json:"tickPolicy,omitempty"`
	Track      string `json:"track,omitempty"`
}

// Devices is spec.domain.devices.
type Devices struct {
	Interfaces                 []Interface `json:"interfaces,omitempty"`
	Disks                      []Disk      `json:"disks,omitempty"`
	AutoattachPodInterface     *bool       `json:"autoattachPodInterface,omitempty"`
	AutoattachSerialConsole    *bool       `json:"autoattachSerialConsole,omitempty"`
	AutoattachGraphicsDevice   *bool       `json:"autoattachGraphicsDevice,omitempty"`
	AutoattachMemBalloon       *bool       `json:"autoattachMemBalloon,omitempty"`
	NetworkInterfaceMultiQueue *bool       `json:"networkInterfaceMultiqueue,omitempty"`
	// DisableHotplug drops the virtio-scsi controller KubeVirt adds for
	// hotplugged disks.
	DisableHotplug bool `json:"disableHotplug,omitempty"`
	// BlockMultiQueue gives each virtio disk one queue per vCPU.
	BlockMultiQueue       *bool     `json:"blockMultiQueue,omitempty"`
	Rng                   *struct{} `json:"rng,omitempty"`
	TPM                   *struct{} `json:"tpm,omitempty"`
	UseVirtioTransitional *bool     `json:"useVirtioTransitional,omitempty"`
}
