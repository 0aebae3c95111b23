package api

// Defaults KubeVirt applies, and that [SetDefaults] reproduces.
const (
	// DefaultNetworkName is the name of the pod network and of its
	// interface added when a VMI declares none.
	DefaultNetworkName = "default"
	// DefaultModel is the interface model when none is given.
	DefaultModel = "virtio"
	// DefaultVMNetworkCIDR is the masquerade IPv4 network.
	DefaultVMNetworkCIDR = "10.0.2.0/24"
	// DefaultVMIPv6NetworkCIDR is the masquerade IPv6 network.
	DefaultVMIPv6NetworkCIDR = "fd10:0:2::/120"
	// DefaultProtocol is a port's protocol when none is given.
	DefaultProtocol = "TCP"
)

// SetDefaults applies the defaults KubeVirt's mutating webhook applies to
// the fields virtnet reads:
//
//   - when the VMI has neither interfaces nor networks and
//     autoattachPodInterface is not false, a pod network named "default" and
//     a bridge interface of the same name (KubeVirt's default binding when
//     the cluster configures none);
//   - an interface without a model gets "virtio";
//   - a port without a protocol gets "TCP";
//   - a VMI without a namespace gets "default".
//
// It is idempotent.
func SetDefaults(vmi *VMI) {
	if vmi.Metadata.Namespace == "" {
		vmi.Metadata.Namespace = "default"
	}
	d := &vmi.Spec.Domain.Devices
	auto := d.AutoattachPodInterface == nil || *d.AutoattachPodInterface
	if auto && len(d.Interfaces) == 0 && len(vmi.Spec.Networks) == 0 {
		vmi.Spec.Networks = []Network{{Name: DefaultNetworkName, Pod: &PodNetwork{}}}
		d.Interfaces = []Interface{{Name: DefaultNetworkName, Bridge: &struct{}{}}}
	}
	for i := range d.Interfaces {
		iface := &d.Interfaces[i]
		if iface.Model == "" {
			iface.Model = DefaultModel
		}
		for j := range iface.Ports {
			if iface.Ports[j].Protocol == "" {
				iface.Ports[j].Protocol = DefaultProtocol
			}
		}
	}
}
