// Package phase2 is the unprivileged half of virtnet's pod networking, as
// KubeVirt's virt-launcher runs it in its preStartHook: it reads the
// interface records phase1 wrote and has each binding add its device to
// the libvirt domain, and runs the interfaces' DHCP servers. It changes
// nothing in the kernel (the DHCP servers bind sockets in the pod's
// namespace) and needs no privileges; everything it needs from the pod's
// namespace is in its records.
//
// A launcher's path is: api.Load the VMI; phase1.Run in the pod's
// namespace (privileged, virt-handler's part) writes the records;
// prestart.Hook in the launcher builds the domain, renders the interfaces
// from the records, starts the DHCP servers the bindings ask for and
// writes the images; the launcher defines the domain it returns. This
// package is the rendering under that hook:
//
//   - [Items] resolves each interface's binding and reads its record from
//     a [Records] source: phase1's cache ([CacheRecords]; [ReadRecords]
//     is the shorthand) or the binding plugins' hand-off on the tap
//     (kubevirt/kvplugin.HandOff); [Render] has the bindings render their
//     devices into a domain, replacing a device of the same alias in place
//     and keeping the rest; [DHCPServers] runs one DHCP server per
//     interface (started on a plug, stopped on an unplug, optionally
//     supervised). prestart.Hook's network step is these three, and so is
//     a KubeVirt 1.x hook sidecar handed its domain by KubeVirt.
//   - [Sync] is the live update of a running domain: the devices to
//     attach, detach or update, and the DHCP servers started or stopped
//     to match.
//   - [Domain] is the dry run: the same XML, built whole, with no DHCP
//     server and no image (a guest booted from it gets no address on a
//     bridge or masquerade interface). It keeps its name, as the one
//     function that returns a domain from a VMI and a cache; its
//     documentation says it is the XML only.
//
// Interfaces are rendered in spec.domain.devices.interfaces order, so the
// guest sees its NICs in the order the VMI declares them, whatever the
// order of spec.networks (in which phase1 plugs them).
//
// A missing record is a [*MissingCacheError]; a record that does not
// belong to the VMI's current spec (another binding or pod interface, or
// another schema version) matches [ErrStaleCache]: phase1 must run again.
// The DHCP servers (package phase2/dhcp) and the cloud-init images
// (package phase2/cloudinit) are the other parts of phase2.
package phase2
