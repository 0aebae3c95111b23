// Package phase2 is the unprivileged half of virtnet's pod networking, as
// KubeVirt's virt-launcher runs it in its preStartHook: it reads the
// interface records phase1 wrote and has each binding add its device to
// the libvirt domain. It never touches the kernel and needs no
// privileges; everything it needs from the pod's namespace is in the
// cache.
//
// [EnrichDomain] adds the network devices to a domain (for instance one
// from domxml.Build); [Domain] builds the whole domain. Both render the
// interfaces in spec.domain.devices.interfaces order, so the guest sees
// its NICs in the order the VMI declares them, whatever the order of
// spec.networks (in which phase1 plugs them).
//
// A missing record is a [*MissingCacheError]; a record that does not
// belong to the VMI's current spec (another binding or pod interface, or
// another schema version) is a [*StaleCacheError]: phase1 must run again.
// The DHCP servers (package phase2/dhcp) and the cloud-init images
// (package phase2/cloudinit) are the other parts of phase2.
package phase2
