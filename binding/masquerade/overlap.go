package masquerade

import (
	"fmt"
	"net/netip"

	"github.com/virtnet/virtnet/cache"
)

// OverlapError is a VM network (vmNetworkCIDR, vmIPv6NetworkCIDR or their
// defaults) that overlaps an address or a route of the pod link: the
// bridge's connected route would take the pod's traffic to those
// addresses (or the bridge would take the pod's own address).
type OverlapError struct {
	// Field is "vmNetworkCIDR" or "vmIPv6NetworkCIDR"; Network is the VM
	// network (the default when the field is unset).
	Field   string
	Network netip.Prefix
	// PodLink holds Conflict, an address ("address") or a route's
	// destination ("route").
	PodLink  string
	Kind     string
	Conflict string
}

// Permanent reports true: the VMI or the pod network must change.
func (e *OverlapError) Permanent() bool { return true }

func (e *OverlapError) Error() string {
	return fmt.Sprintf("%s %s overlaps the %s %s of pod link %s: choose a VM network outside the pod's addresses and routes",
		e.Field, e.Network, e.Kind, e.Conflict, e.PodLink)
}

// checkOverlap refuses VM networks that overlap an address or a route
// (other than a default route) of the pod link as discovered. Plan runs
// it, so a VMI is refused before phase1 changes the namespace.
func checkOverlap(link *cache.Link, v4, v6 Subnet) error {
	type vmNet struct {
		field string
		p     netip.Prefix
	}
	var nets []vmNet
	if v4.VM.IsValid() {
		nets = append(nets, vmNet{"vmNetworkCIDR", v4.VM.Masked()})
	}
	if v6.VM.IsValid() {
		nets = append(nets, vmNet{"vmIPv6NetworkCIDR", v6.VM.Masked()})
	}
	for _, n := range nets {
		fail := func(kind, conflict string) error {
			return &OverlapError{Field: n.field, Network: n.p, PodLink: link.Name, Kind: kind, Conflict: conflict}
		}
		for _, a := range link.Addresses {
			if n.p.Overlaps(a.Masked()) {
				return fail("address", a.String())
			}
		}
		for _, r := range link.Routes {
			if r.Dst.Bits() > 0 && n.p.Overlaps(r.Dst) {
				return fail("route", r.Dst.String())
			}
		}
	}
	return nil
}
