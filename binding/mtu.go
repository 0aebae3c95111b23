package binding

import (
	"fmt"

	"github.com/virtnet/virtnet/api"
)

// GuestMTU is the MTU a routed binding (masquerade) gives the VM's
// interface: the pod link's podMTU, or the smaller clamp the VMI's
// [api.GuestMTUAnnotation] asks for the interface. A clamp above podMTU
// is refused with an *api.FieldError naming the annotation's entry: a VM
// MTU above the pod link's would send frames the pod's network drops.
func GuestMTU(in Input, podLink string, podMTU int) (int, error) {
	clamp, err := in.VMI.GuestMTU(in.Pair.Interface.Name)
	if err != nil || clamp == 0 {
		return podMTU, err
	}
	if podMTU > 0 && clamp > podMTU {
		return 0, &api.FieldError{
			Path:   fmt.Sprintf("metadata.annotations[%s].%s", api.GuestMTUAnnotation, in.Pair.Interface.Name),
			Value:  clamp,
			Reason: fmt.Sprintf("above the MTU %d of the pod link %s: the clamp can only lower the MTU", podMTU, podLink),
		}
	}
	return clamp, nil
}

// RefuseGuestMTU is what a layer-2 binding (bridge) does with a clamp:
// when the VMI's [api.GuestMTUAnnotation] asks one for the interface, an
// *api.FieldError says why it cannot have it. Across a bridge nothing
// tells a sender that a frame is too big for the VM: the bridge drops it
// silently (no ICMP "fragmentation needed" or "packet too big"), which is
// the black hole a free MTU field is feared for. A routed binding
// (masquerade) answers with ICMP, and path MTU discovery works.
func RefuseGuestMTU(in Input, method string) error {
	clamp, err := in.VMI.GuestMTU(in.Pair.Interface.Name)
	if err != nil || clamp == 0 {
		return err
	}
	return &api.FieldError{
		Path:   fmt.Sprintf("metadata.annotations[%s].%s", api.GuestMTUAnnotation, in.Pair.Interface.Name),
		Value:  clamp,
		Reason: fmt.Sprintf("the %s binding forwards at layer 2, where nothing tells a sender about a smaller MTU (frames above it would be dropped silently); use masquerade", method),
	}
}
