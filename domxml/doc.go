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
//   - UUID is spec.domain.firmware.uuid when set. Otherwise it is derived
//     from the VMI's metadata.uid (from "<namespace>/<name>" when the VMI has
//     no uid) as a name-based UUID, version 5: SHA-1 over [UUIDNamespace]
//     and that string ([DomainUUID]). A restarted VMI keeps its UUID; two
//     VMIs never share one.
//   - Memory is spec.domain.memory.guest, else
//     spec.domain.resources.requests.memory, else resources.limits.memory,
//     else [DefaultMemory] (64 MiB: KubeVirt refuses a VMI without memory;
//     virtnet renders it small enough to boot a test image).
//   - CPU is one vCPU per sockets×cores×threads (each defaulting to 1), with
//     cpu mode host-model unless spec.domain.cpu.model names
//     host-passthrough, host-model or a named model (mode custom).
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
package domxml
