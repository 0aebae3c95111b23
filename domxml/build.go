package domxml

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
)

// DefaultMachine is the machine type of a VMI that names none.
const DefaultMachine = "q35"

// DomainName is the libvirt name of a VMI's domain: "<namespace>_<name>".
func DomainName(vmi *api.VMI) string {
	return vmi.Metadata.Namespace + "_" + vmi.Metadata.Name
}

// Build returns the domain of a validated VMI (see the package
// documentation for what it renders and [Options] for where files are).
// Network interfaces are added only by [Options.Interfaces]. A VMI with
// unsupported features gets an errors.Join of one [*api.UnsupportedError]
// per field.
func Build(vmi *api.VMI, opts Options) (*libvirtxml.Domain, error) {
	if len(vmi.Unsupported) > 0 {
		errs := make([]error, len(vmi.Unsupported))
		for i, p := range vmi.Unsupported {
			errs[i] = &api.UnsupportedError{Path: p}
		}
		return nil, errors.Join(errs...)
	}
	o := opts.WithDefaults()
	mem, err := guestMemory(vmi)
	if err != nil {
		return nil, err
	}
	dom := &libvirtxml.Domain{
		Type:     "kvm",
		Name:     DomainName(vmi),
		UUID:     DomainUUID(vmi),
		Memory:   &libvirtxml.DomainMemory{Value: uint(mem), Unit: "b"},
		VCPU:     &libvirtxml.DomainVCPU{Placement: "static", Value: uint(vmi.VCPUs())},
		SysInfo:  sysInfo(vmi, o),
		OS:       osSection(vmi, o),
		Features: features(vmi),
		CPU:      cpu(vmi),
		Clock:    clock(vmi),
		Devices:  &libvirtxml.DomainDeviceList{},
	}
	dom.OS.SMBios = &libvirtxml.DomainSMBios{Mode: "sysinfo"}
	if h := vmi.Spec.Domain.Memory; h != nil && h.Hugepages != nil {
		memoryBacking(vmi, dom, mem)
	}
	if err := devices(vmi, o, dom.Devices); err != nil {
		return nil, err
	}
	if n := len(dom.Devices.Disks); n > 0 {
		// KubeVirt's converter: one shared I/O thread for the disks
		// (more only with ioThreadsPolicy or dedicatedIOThread, which
		// virtnet refuses).
		dom.IOThreads = 1
	}
	if c := vmi.Spec.Domain.CPU; c != nil && c.DedicatedCPUPlacement {
		if err := pinCPUs(vmi, o, dom); err != nil {
			return nil, err
		}
	}
	if o.Interfaces != nil {
		if err := o.Interfaces(dom); err != nil {
			return nil, err
		}
	}
	if err := ReserveHotplugPorts(vmi, dom, o.HotplugPorts); err != nil {
		return nil, err
	}
	return dom, nil
}

// guestMemory is spec.domain.memory.guest, else resources.requests.memory,
// else resources.limits.memory, else the huge page size (KubeVirt's
// mutating webhook requests that much), else DefaultMemory.
func guestMemory(vmi *api.VMI) (uint64, error) {
	d := &vmi.Spec.Domain
	var guest, pageSize string
	if m := d.Memory; m != nil {
		guest = m.Guest
		if m.Hugepages != nil {
			pageSize = m.Hugepages.PageSize
		}
	}
	for _, c := range []struct{ path, q string }{
		{"spec.domain.memory.guest", guest},
		{"spec.domain.resources.requests.memory", d.Resources.Requests["memory"]},
		{"spec.domain.resources.limits.memory", d.Resources.Limits["memory"]},
		{"spec.domain.memory.hugepages.pageSize", pageSize},
	} {
		if c.q == "" {
			continue
		}
		b, err := api.ParseQuantity(c.q)
		if err != nil {
			return 0, fieldError(c.path, c.q, err)
		}
		if b == 0 {
			return 0, fieldError(c.path, c.q, errors.New("zero memory"))
		}
		return b, nil
	}
	return DefaultMemory, nil
}

// sysInfo is KubeVirt's SMBIOS: the system entries uuid (the domain's),
// serial (spec.domain.firmware.serial, when set) and the cluster's
// manufacturer, family, product, sku and version ([Options.SMBIOS]), in
// KubeVirt's order; the chassis entries when spec.domain.chassis is set.
func sysInfo(vmi *api.VMI, o Options) []libvirtxml.DomainSysInfo {
	sys := []libvirtxml.DomainSysInfoEntry{{Name: "uuid", Value: DomainUUID(vmi)}}
	if f := vmi.Spec.Domain.Firmware; f != nil && f.Serial != "" {
		sys = append(sys, libvirtxml.DomainSysInfoEntry{Name: "serial", Value: f.Serial})
	}
	sm := o.SMBIOS
	sys = append(sys,
		libvirtxml.DomainSysInfoEntry{Name: "manufacturer", Value: sm.Manufacturer},
		libvirtxml.DomainSysInfoEntry{Name: "family", Value: sm.Family},
		libvirtxml.DomainSysInfoEntry{Name: "product", Value: sm.Product},
		libvirtxml.DomainSysInfoEntry{Name: "sku", Value: sm.SKU},
		libvirtxml.DomainSysInfoEntry{Name: "version", Value: sm.Version},
	)
	smbios := &libvirtxml.DomainSysInfoSMBIOS{System: &libvirtxml.DomainSysInfoSystem{Entry: sys}}
	if c := vmi.Spec.Domain.Chassis; c != nil {
		smbios.Chassis = &libvirtxml.DomainSysInfoChassis{Entry: []libvirtxml.DomainSysInfoEntry{
			{Name: "manufacturer", Value: c.Manufacturer},
			{Name: "version", Value: c.Version},
			{Name: "serial", Value: c.Serial},
			{Name: "asset", Value: c.Asset},
			{Name: "sku", Value: c.SKU},
		}}
	}
	return []libvirtxml.DomainSysInfo{{SMBIOS: smbios}}
}

// memoryBacking backs the guest with huge pages as KubeVirt does: libvirt's
// default huge page size (the pod's hugetlbfs mount decides), a memfd
// source unless the VMI's MemfdAnnotation is "false", and then one NUMA
// cell holding every vCPU and the memory, which memfd needs.
func memoryBacking(vmi *api.VMI, dom *libvirtxml.Domain, mem uint64) {
	dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{MemoryHugePages: &libvirtxml.DomainMemoryHugepages{}}
	if vmi.Metadata.Annotations[MemfdAnnotation] == "false" {
		return
	}
	dom.MemoryBacking.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
	dom.CPU.Numa = &libvirtxml.DomainNuma{Cell: []libvirtxml.DomainCell{{
		ID:     uintp(0),
		CPUs:   fmt.Sprintf("0-%d", vmi.VCPUs()-1),
		Memory: uint(mem / 1024),
		Unit:   "KiB",
	}}}
}

// MemfdAnnotation set to "false" on a VMI with huge pages drops the memfd
// memory source (KubeVirt's kubevirt.io/memfd).
const MemfdAnnotation = "kubevirt.io/memfd"

// pinCPUs is dedicatedCpuPlacement: vCPU i runs on the i-th CPU of
// [Options.CPUSet], the emulator thread (isolateEmulatorThread) on the
// next one, and the guest is told its CPUs are dedicated (kvm
// hint-dedicated). This is what KubeVirt's relaxed CPU pool gives for a
// cpuset without known thread siblings.
func pinCPUs(vmi *api.VMI, o Options, dom *libvirtxml.Domain) error {
	const path = "spec.domain.cpu.dedicatedCpuPlacement"
	n := int(vmi.VCPUs())
	need := n
	if vmi.Spec.Domain.CPU.IsolateEmulatorThread {
		need++
	}
	if len(o.CPUSet) == 0 {
		return errorf(path, true, "needs the pod's cpuset (Options.CPUSet)")
	}
	if len(o.CPUSet) < need {
		return errorf(path, true, "needs %d CPUs, the pod's cpuset has %d (%v)", need, len(o.CPUSet), o.CPUSet)
	}
	tune := &libvirtxml.DomainCPUTune{}
	for i := range n {
		tune.VCPUPin = append(tune.VCPUPin, libvirtxml.DomainCPUTuneVCPUPin{VCPU: uint(i), CPUSet: strconv.Itoa(o.CPUSet[i])})
	}
	if vmi.Spec.Domain.CPU.IsolateEmulatorThread {
		tune.EmulatorPin = &libvirtxml.DomainCPUTuneEmulatorPin{CPUSet: strconv.Itoa(o.CPUSet[n])}
	}
	dom.CPUTune = tune
	if dom.Features.KVM == nil {
		dom.Features.KVM = &libvirtxml.DomainFeatureKVM{}
	}
	dom.Features.KVM.HintDedicated = &libvirtxml.DomainFeatureState{State: "on"}
	return nil
}

func machine(vmi *api.VMI) string {
	if m := vmi.Spec.Domain.Machine; m != nil && m.Type != "" {
		return m.Type
	}
	return DefaultMachine
}

// efi returns whether the VMI boots EFI and whether with secure boot.
func efi(vmi *api.VMI) (on, secure bool) {
	f := vmi.Spec.Domain.Firmware
	if f == nil || f.Bootloader == nil || f.Bootloader.EFI == nil {
		return false, false
	}
	sb := f.Bootloader.EFI.SecureBoot
	return true, sb == nil || *sb
}

func osSection(vmi *api.VMI, o Options) *libvirtxml.DomainOS {
	os := &libvirtxml.DomainOS{
		Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: machine(vmi), Type: "hvm"},
	}
	if f := vmi.Spec.Domain.Firmware; f != nil && f.Bootloader != nil && f.Bootloader.BIOS != nil &&
		f.Bootloader.BIOS.UseSerial != nil && *f.Bootloader.BIOS.UseSerial {
		os.BIOS = &libvirtxml.DomainBIOS{UseSerial: "yes"}
	}
	on, secure := efi(vmi)
	if !on {
		return os
	}
	code, vars, yes := OVMFCode, OVMFVars, "no"
	if secure {
		code, vars, yes = OVMFCodeSecureBoot, OVMFVarsSecureBoot, "yes"
	}
	// The loader and variables are named, as KubeVirt v0.53 does, not
	// left to libvirt's firmware autoselection (<os firmware='efi'>):
	// libvirt refuses a loader's type, readonly or secure attributes and a
	// variables template next to autoselection (TestDomain defines the
	// domain in libvirt's test driver).
	os.Loader = &libvirtxml.DomainLoader{
		Path: filepath.Join(o.OVMFDir, code), Readonly: "yes", Secure: yes, Type: "pflash",
	}
	os.NVRam = &libvirtxml.DomainNVRam{
		NVRam:    filepath.Join(o.NVRAMDir, vmi.Metadata.Name+"_VARS.fd"),
		Template: filepath.Join(o.OVMFDir, vars),
	}
	return os
}

func features(vmi *api.VMI) *libvirtxml.DomainFeatureList {
	fl := &libvirtxml.DomainFeatureList{}
	f := vmi.Spec.Domain.Features
	// KubeVirt switches ACPI on unless it is explicitly disabled.
	if f == nil || f.ACPI.Enabled == nil || *f.ACPI.Enabled {
		fl.ACPI = &libvirtxml.DomainFeature{}
	}
	if f != nil && f.APIC.On() {
		fl.APIC = &libvirtxml.DomainFeatureAPIC{}
	}
	_, secure := efi(vmi)
	if secure || (f != nil && f.SMM.On()) {
		fl.SMM = &libvirtxml.DomainFeatureSMM{State: "on"}
	}
	if f != nil && f.HyperV != nil {
		fl.HyperV = hyperV(f.HyperV)
	}
	return fl
}

func state(fs *api.FeatureState) *libvirtxml.DomainFeatureState {
	if fs == nil {
		return nil
	}
	if fs.On() {
		return &libvirtxml.DomainFeatureState{State: "on"}
	}
	return &libvirtxml.DomainFeatureState{State: "off"}
}

// DefaultSpinlockRetries is the hyperv spinlocks retry count when the VMI
// enables spinlocks without one (KubeVirt's default).
const DefaultSpinlockRetries = 4096

func hyperV(h *api.HyperV) *libvirtxml.DomainFeatureHyperV {
	hv := &libvirtxml.DomainFeatureHyperV{
		Mode:            "custom",
		Relaxed:         state(h.Relaxed),
		VAPIC:           state(h.VAPIC),
		VPIndex:         state(h.VPIndex),
		Runtime:         state(h.Runtime),
		Synic:           state(h.SyNIC),
		Reset:           state(h.Reset),
		Frequencies:     state(h.Frequencies),
		ReEnlightenment: state(h.Reenlightenment),
		IPI:             state(h.IPI),
	}
	if s := state(h.SyNICTimer); s != nil {
		hv.STimer = &libvirtxml.DomainFeatureHyperVSTimer{DomainFeatureState: *s}
	}
	if s := state(h.TLBFlush); s != nil {
		hv.TLBFlush = &libvirtxml.DomainFeatureHyperVTLBFlush{DomainFeatureState: *s}
	}
	if sp := h.Spinlocks; sp != nil {
		hv.Spinlocks = &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: libvirtxml.DomainFeatureState{State: "off"}}
		if sp.Enabled == nil || *sp.Enabled {
			hv.Spinlocks.State, hv.Spinlocks.Retries = "on", DefaultSpinlockRetries
			if sp.Retries != nil {
				hv.Spinlocks.Retries = uint(*sp.Retries)
			}
		}
	}
	return hv
}

// cpu is KubeVirt's <cpu>: mode host-model unless spec.domain.cpu.model
// names host-passthrough or a model (mode custom, libvirt's default match
// and fallback, as KubeVirt writes neither), the topology of
// [api.VMI.Topology] and spec.domain.cpu.features.
func cpu(vmi *api.VMI) *libvirtxml.DomainCPU {
	c := &libvirtxml.DomainCPU{Mode: "host-model"}
	t := vmi.Topology()
	c.Topology = &libvirtxml.DomainCPUTopology{Sockets: int(t.Sockets), Cores: int(t.Cores), Threads: int(t.Threads)}
	s := vmi.Spec.Domain.CPU
	if s == nil {
		return c
	}
	switch s.Model {
	case "", "host-model":
	case "host-passthrough":
		c.Mode = "host-passthrough"
	default:
		c.Mode = "custom"
		c.Model = &libvirtxml.DomainCPUModel{Value: s.Model}
	}
	for _, f := range s.Features {
		c.Features = append(c.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: cmp.Or(f.Policy, "require")})
	}
	return c
}

func clock(vmi *api.VMI) *libvirtxml.DomainClock {
	c := &libvirtxml.DomainClock{Offset: "utc"}
	s := vmi.Spec.Domain.Clock
	if s == nil {
		return c
	}
	switch {
	case s.Timezone != "":
		c.Offset, c.TimeZone = "timezone", s.Timezone
	case s.UTC != nil && s.UTC.OffsetSeconds != nil:
		c.Adjustment = strconv.Itoa(*s.UTC.OffsetSeconds)
	case s.UTC != nil:
		// KubeVirt: the guest's RTC starts at the host's UTC time.
		c.Adjustment = "reset"
	}
	if t := s.Timer; t != nil {
		for _, tm := range []struct {
			name string
			a    *api.TimerAttrs
		}{{"hpet", t.HPET}, {"kvmclock", t.KVM}, {"pit", t.PIT}, {"rtc", t.RTC}, {"hypervclock", t.HyperV}} {
			if tm.a == nil {
				continue
			}
			dt := libvirtxml.DomainTimer{Name: tm.name, TickPolicy: tm.a.TickPolicy, Track: tm.a.Track, Present: "yes"}
			if tm.a.Present != nil && !*tm.a.Present {
				dt.Present = "no"
			}
			c.Timer = append(c.Timer, dt)
		}
	}
	return c
}

// VirtioModel is the model name of virtio devices: virtio-non-transitional,
// or virtio-transitional with spec.domain.devices.useVirtioTransitional.
func VirtioModel(vmi *api.VMI) string {
	if t := vmi.Spec.Domain.Devices.UseVirtioTransitional; t != nil && *t {
		return "virtio-transitional"
	}
	return "virtio-non-transitional"
}

func uintp(u uint) *uint { return &u }

// unlessFalse is an optional switch that is on by default.
func unlessFalse(b *bool) bool { return b == nil || *b }

func devices(vmi *api.VMI, o Options, d *libvirtxml.DomainDeviceList) error {
	vd := &vmi.Spec.Domain.Devices
	d.Controllers = append(d.Controllers,
		libvirtxml.DomainController{Type: "usb", Index: uintp(0), Model: "none"},
	)
	if isQ35(machine(vmi)) {
		d.Controllers = append(d.Controllers, libvirtxml.DomainController{Type: "pci", Index: uintp(0), Model: "pcie-root"})
	}
	if err := disks(vmi, o, d); err != nil {
		return err
	}
	if unlessFalse(vd.AutoattachSerialConsole) {
		// KubeVirt adds the virtio-serial controller with the console
		// only; without it libvirt adds one for the agent channel.
		d.Controllers = append(d.Controllers, libvirtxml.DomainController{Type: "virtio-serial", Index: uintp(0), Model: VirtioModel(vmi)})
		// The serial port is the socket virtctl console connects to
		// (through virt-handler); the console is libvirt's pty on it.
		d.Serials = []libvirtxml.DomainSerial{{
			Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{
				Mode: "bind", Path: SerialSocket(vmi, o),
			}},
			Target: &libvirtxml.DomainSerialTarget{Port: uintp(0)},
		}}
		d.Consoles = []libvirtxml.DomainConsole{{
			Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
			Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: uintp(0)},
		}}
	}
	d.Channels = []libvirtxml.DomainChannel{{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind"}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: GuestAgentChannel}},
	}}
	if unlessFalse(vd.AutoattachGraphicsDevice) {
		d.Graphics = []libvirtxml.DomainGraphic{{VNC: &libvirtxml.DomainGraphicVNC{
			Listeners: []libvirtxml.DomainGraphicListener{{Socket: &libvirtxml.DomainGraphicListenerSocket{
				Socket: filepath.Join(o.PrivateDir, instanceKey(vmi), "virt-vnc"),
			}}},
		}}}
		d.Videos = []libvirtxml.DomainVideo{{Model: libvirtxml.DomainVideoModel{Type: "vga", Heads: 1, VRam: 16384}}}
	}
	if vd.TPM != nil {
		d.TPMs = []libvirtxml.DomainTPM{{
			Model:   "tpm-tis",
			Backend: &libvirtxml.DomainTPMBackend{Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"}},
		}}
	}
	if unlessFalse(vd.AutoattachMemBalloon) {
		d.MemBalloon = &libvirtxml.DomainMemBalloon{Model: VirtioModel(vmi), Stats: &libvirtxml.DomainMemBalloonStats{Period: 10}}
	} else {
		d.MemBalloon = &libvirtxml.DomainMemBalloon{Model: "none"}
	}
	if vd.Rng != nil {
		d.RNGs = []libvirtxml.DomainRNG{{
			Model:   VirtioModel(vmi),
			Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
		}}
	}
	return nil
}

// SerialSocket is the unix socket of the VMI's serial console, where
// KubeVirt's virt-handler (virtctl console) expects it:
// <PrivateDir>/<uid>/virt-serial0.
func SerialSocket(vmi *api.VMI, opts Options) string {
	return filepath.Join(opts.WithDefaults().PrivateDir, instanceKey(vmi), "virt-serial0")
}

// GuestAgentChannel is the virtio-serial channel of the QEMU guest agent.
const GuestAgentChannel = "org.qemu.guest_agent.0"

// instanceKey names the VMI's private directory: its uid, as KubeVirt's,
// else "<namespace>_<name>".
func instanceKey(vmi *api.VMI) string { return cmp.Or(vmi.Metadata.UID, DomainName(vmi)) }

func isQ35(m string) bool {
	return m == "q35" || (len(m) > 7 && m[:7] == "pc-q35-")
}

// errorf builds an [*api.FieldError] (see fieldError).
func errorf(path string, value any, format string, args ...any) error {
	return fieldError(path, value, fmt.Errorf(format, args...))
}
