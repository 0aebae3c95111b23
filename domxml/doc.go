// Package domxml builds a complete libvirt domain ([libvirtxml.Domain]) from
// a validated VMI: what KubeVirt's converter does for everything but the
// network interfaces, which the bindings add (see package phase2). It reads
// nothing from disk and touches neither the kernel nor libvirt, so it runs
// anywhere and its output is deterministic: the same VMI and [Options]
// always give the same XML.
//
// # Choices
//
//   - Name is "<namespace>_<name>", as KubeVirt names its domains.
//   - UUID is spec.domain.firmware.uuid when set (a VirtualMachine's VMI
//     always has one: api.Decode gives it KubeVirt's stable uuid5 of the
//     VM's name). Otherwise it is derived
//     from the VMI's metadata.uid (from "<namespace>/<name>" when the VMI has
//     no uid) as a name-based UUID, version 5: SHA-1 over [UUIDNamespace]
//     and that string ([DomainUUID]). A restarted VMI keeps its UUID; two
//     VMIs never share one.
//   - Memory is spec.domain.memory.guest, else
//     spec.domain.resources.requests.memory, else resources.limits.memory,
//     else [DefaultMemory] (64 MiB: KubeVirt refuses a VMI without memory;
//     virtnet renders it small enough to boot a test image).
//   - CPU is one vCPU per sockets×cores×threads (api.VMI.Topology: each
//     defaulting to 1, sockets from resources.limits.cpu or requests.cpu
//     when none is set), with cpu mode host-model unless
//     spec.domain.cpu.model names host-passthrough or a model (mode
//     custom).
//   - Machine is q35 unless spec.domain.machine.type says otherwise.
//     Firmware is BIOS unless spec.domain.firmware.bootloader.efi is set;
//     EFI uses Debian's OVMF (package ovmf) 4 MiB builds, secure boot unless
//     efi.secureBoot is false (then SMM is switched on, as libvirt requires).
//   - Devices follow KubeVirt's path conventions; see [Options] for every
//     directory and [DiskPath] for each volume type. Virtio devices use
//     model "virtio-non-transitional" ("virtio-transitional" with
//     spec.domain.devices.useVirtioTransitional): a PCI Express device on
//     q35, which is what KubeVirt v0.53 renders.
//   - On q35 the domain gets one pcie-root-port controller per PCI device
//     that needs one (see [EnsureRootPorts]), so that explicit guest PCI
//     addresses name buses that exist and the XML does not depend on what
//     libvirt would add.
//
// A VMI that uses a KubeVirt feature virtnet does not render
// ([api.VMI.Unsupported]) is refused with one [*api.UnsupportedError] per
// field, joined.
//
// # Fields
//
// Every field of the VMI subset ([api.VMI]) and what the domain does with
// it, as KubeVirt v0.53 does (TestFieldTable checks each row; the
// comparison with KubeVirt's own converter, TestKubeVirtComparison, renders
// each "rendered" row of the domain's own fields through both), and every
// key of interfaces[] and networks[] in KubeVirt's schema, v0.53.2's and
// v1.9.0's (TestNetFieldTable renders those rows through phase1 and
// phase2; TestNetFieldsCoverSchema fails on a key without a row):
//
//	metadata.name                                  rendered  <name> <namespace>_<name>; cloud-init image path
//	metadata.namespace                             rendered  <name>
//	metadata.uid                                   rendered  <PrivateDir>/<uid>/virt-serial0 and virt-vnc; <uuid> of a VMI without firmware.uuid
//	metadata.annotations[kubevirt.io/memfd]        rendered  "false": huge pages without the memfd source
//	metadata.labels                                n/a       scheduling only
//	spec.domain.resources.requests.memory          rendered  <memory> when memory.guest is unset
//	spec.domain.resources.limits.memory            rendered  <memory> when requests.memory is unset too
//	spec.domain.resources.requests.cpu             rendered  sockets (so <vcpu>, and NIC and disk queues) when cpu sets no topology
//	spec.domain.resources.limits.cpu               rendered  the same, before requests.cpu; rounded up to whole CPUs
//	spec.domain.memory.guest                       rendered  <memory>
//	spec.domain.memory.hugepages.pageSize          rendered  <memoryBacking><hugepages/><source type='memfd'/>, one NUMA cell; <memory> when nothing else sets it
//	spec.domain.cpu.cores                          rendered  <topology cores>, <vcpu>
//	spec.domain.cpu.sockets                        rendered  <topology sockets>, <vcpu>
//	spec.domain.cpu.threads                        rendered  <topology threads>, <vcpu>
//	spec.domain.cpu.model                          rendered  host-model (default), host-passthrough, or mode custom with <model>
//	spec.domain.cpu.features                       rendered  <feature name policy> (policy require by default)
//	spec.domain.cpu.dedicatedCpuPlacement          rendered  <cputune><vcpupin> on Options.CPUSet in order, <kvm><hint-dedicated state='on'/>
//	spec.domain.cpu.isolateEmulatorThread          rendered  <emulatorpin> on the next CPU of Options.CPUSet
//	spec.domain.firmware.uuid                      rendered  <uuid> and SMBIOS system uuid
//	spec.domain.firmware.serial                    rendered  SMBIOS system serial
//	spec.domain.firmware.bootloader.bios.useSerial rendered  <bios useserial='yes'/>
//	spec.domain.firmware.bootloader.efi.secureBoot rendered  OVMF loader and variables, secure boot and SMM unless false
//	spec.domain.machine.type                       rendered  <type machine>
//	spec.domain.features.acpi                      rendered  <acpi/> unless disabled
//	spec.domain.features.apic                      rendered  <apic/>
//	spec.domain.features.smm                       rendered  <smm state='on'/>
//	spec.domain.features.hyperv                    rendered  <hyperv> enlightenments (spinlocks retries 4096 by default)
//	spec.domain.clock.utc.offsetSeconds            rendered  <clock offset='utc' adjustment>; utc without offset: adjustment reset
//	spec.domain.clock.timezone                     rendered  <clock offset='timezone'>
//	spec.domain.clock.timer                        rendered  <timer> hpet, kvmclock, pit, rtc, hypervclock
//	spec.domain.chassis                            rendered  SMBIOS chassis entries
//	spec.domain.devices.disks[].disk.bus           rendered  <target bus dev>: sata (sdX) by default, virtio (vdX), scsi (drive address on the virtio-scsi controller)
//	spec.domain.devices.disks[].disk.readonly      rendered  <readonly/>
//	spec.domain.devices.disks[].disk.pciAddress    rendered  <address type='pci'>
//	spec.domain.devices.disks[].cdrom              rendered  device cdrom, sata, read-only and tray closed by default
//	spec.domain.devices.disks[].lun                rendered  device lun on a block volume, bus scsi or virtio
//	spec.domain.devices.disks[].bootOrder          rendered  <boot order>
//	spec.domain.devices.disks[].serial             rendered  <serial>
//	spec.domain.devices.disks[].cache              rendered  <driver cache>; unset: none or writethrough by O_DIRECT (SetDriverModes, in the preStartHook)
//	spec.domain.devices.disks[].io                 rendered  <driver io>; unset: native for block devices and preallocated files with cache none
//	spec.domain.devices.disks[].shareable          rendered  <shareable/>, cache none
//	spec.domain.devices.autoattachSerialConsole    rendered  false: no <serial type='unix'> / <console type='pty'>
//	spec.domain.devices.autoattachGraphicsDevice   rendered  false: no VNC <graphics> and <video>
//	spec.domain.devices.autoattachMemBalloon       rendered  false: <memballoon model='none'>
//	spec.domain.devices.disableHotplug             rendered  true: no virtio-scsi controller unless a disk is on scsi
//	spec.domain.devices.blockMultiQueue            rendered  <driver queues> = vCPUs on virtio disks
//	spec.domain.devices.rng                        rendered  virtio <rng> on /dev/urandom
//	spec.domain.devices.tpm                        rendered  <tpm model='tpm-tis'> emulator 2.0
//	spec.domain.devices.useVirtioTransitional      rendered  virtio-transitional models
//	spec.volumes[].containerDisk                   rendered  qcow2 overlay on disk_<index>.img
//	spec.volumes[].persistentVolumeClaim           rendered  <PrivateDir>/vmi-disks/<vol>/disk.img or /dev/<vol> (Options.BlockVolumes)
//	spec.volumes[].dataVolume                      rendered  as persistentVolumeClaim
//	spec.volumes[].emptyDisk                       rendered  <EmptyDiskDir>/<vol>.qcow2
//	spec.volumes[].hostDisk                        rendered  <PrivateDir>/vmi-disks/<vol>/<file name>, where virt-handler mounts it
//	spec.volumes[].cloudInitNoCloud                rendered  the NoCloud image
//	spec.volumes[].cloudInitConfigDrive            rendered  the ConfigDrive image
//	spec.volumes[].sysprep                         rendered  the sysprep image
//	spec.hostname                                  n/a       cloud-init metadata and DHCP (phase2/cloudinit, phase2/dhcp)
//	spec.subdomain                                 n/a       DHCP search domain (phase2/dhcp)
//	spec.networks                                  n/a       the bindings (phase1, phase2.Render)
//	spec.domain.devices.interfaces                 n/a       the bindings render <interface> and SR-IOV <hostdev>
//	spec.domain.devices.interfaces[].tag           n/a       ConfigDrive device metadata with the pinned PCI address (PinTagged, cloudinit.DevicesMetadata)
//	spec.domain.devices.interfaces[].name          rendered  <alias name='ua-<name>'> of the interface's device
//	spec.domain.devices.interfaces[].bridge        rendered  <interface type='bridge'> on k6t-<pod link> (or 'ethernet' on the tap) with the pod link's MAC
//	spec.domain.devices.interfaces[].masquerade    rendered  the same on the NAT bridge, with the VM's own MAC
//	spec.domain.devices.interfaces[].slirp         rendered  QEMU's -netdev user / -device on <qemu:commandline>, no <interface>
//	spec.domain.devices.interfaces[].sriov         rendered  <hostdev managed='no'> of the VF (alias ua-sriov-<name>)
//	spec.domain.devices.interfaces[].macvtap       rendered  <interface type='ethernet'> on the macvtap, managed='no'
//	spec.domain.devices.interfaces[].passt         rendered  <interface type='user'> with <backend type='passt'/> (KubeVirt v0.56's form)
//	spec.domain.devices.interfaces[].passtBinding  rendered  <interface type='vhostuser'>, <backend type='passt' logFile>, shared memfd memory (KubeVirt v1.9's form)
//	spec.domain.devices.interfaces[].binding       rendered  the binding registered under the plugin's name (passt, macvtap, slirp, managed-tap, or yours)
//	spec.domain.devices.interfaces[].macAddress    rendered  <mac address>
//	spec.domain.devices.interfaces[].model         rendered  <model type>: virtio-non-transitional (or -transitional), e1000, e1000e, igb, …
//	spec.domain.devices.interfaces[].pciAddress    rendered  <address type='pci'>
//	spec.domain.devices.interfaces[].bootOrder     rendered  <boot order>, else <rom enabled='no'/>
//	spec.domain.devices.interfaces[].acpiIndex     rendered  <acpi index> (slirp: acpi-index= on -device)
//	spec.domain.devices.interfaces[].state         rendered  down: <link state='down'/>; absent: no device, phase1 removes what it made (slirp down and SR-IOV up/down refused)
//	spec.domain.devices.interfaces[].ports         rendered  passt <portForward>, slirp hostfwd=; masquerade: NAT rules only (phase1)
//	spec.domain.devices.interfaces[].portRanges    n/a       masquerade NAT rules for exactly those ranges (phase1)
//	spec.domain.devices.interfaces[].dhcpOptions   n/a       the launcher's DHCP server (phase2/dhcp)
//	spec.networks[].name                           rendered  pairs the network with its interface (alias ua-<name>)
//	spec.networks[].pod                            n/a       the pod network: pod link eth0, VM network CIDRs (phase1, DHCP)
//	spec.networks[].multus                         n/a       a Multus network: pod link net<N> or pod<hash> (phase1)
//	spec.domain.devices.autoattachPodInterface     n/a       api.SetDefaults (the default pod network)
//	spec.domain.devices.networkInterfaceMultiqueue n/a       the bindings: <driver queues> = vCPUs, multi-queue taps
//	spec.domain.ioThreadsPolicy                    refused
//	spec.domain.launchSecurity                     refused
//	spec.domain.devices.gpus                       refused
//	spec.domain.devices.hostDevices                refused
//	spec.domain.devices.filesystems                refused
//	spec.domain.devices.sound                      refused
//	spec.domain.devices.watchdog                   refused
//	spec.domain.devices.clientPassthrough          refused
//	spec.domain.devices.inputs                     refused
//	spec.volumes[].others                          refused   configMap, secret, downwardAPI, serviceAccountName, ephemeral, downwardMetrics
//	spec.networks[].resourceClaim                  refused   KubeVirt 1.x's DRA networks
package domxml
