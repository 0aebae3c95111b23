package prestart

import (
	"errors"
	"fmt"
	"strings"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
)

// ErrNeedsNetAdmin is matched by the error of an interface type asked for
// explicitly that the domain could not be started with: <interface
// type='bridge'> makes libvirt create its own tap (vnetN) and enslave it to
// the in-pod bridge, which needs CAP_NET_ADMIN, and the process has not got
// it (KubeVirt v0.53's virt-launcher never has it). The error names the
// option ("InterfaceType" of [Hook], or a command-line flag in the
// examples), the type it asked for and the VMI interfaces that would get it.
var ErrNeedsNetAdmin = errors.New("needs CAP_NET_ADMIN")

// ChooseInterfaceType returns the interface type the VMI's bridge and
// masquerade NICs are rendered with, so that no default hands libvirt a
// domain it cannot start:
//
//   - requested "" (the default): [binding.InterfaceBridge] when netAdmin
//     (the process holds CAP_NET_ADMIN, see [HasNetAdmin]), else
//     [binding.InterfaceEthernet] on the tap phase1 made;
//   - [binding.InterfaceBridge] without netAdmin: an [ErrNeedsNetAdmin]
//     error naming option, when the VMI has such a NIC;
//   - anything else is returned as it is (the renderer checks it).
//
// A VMI without bridge or masquerade interfaces keeps the request.
func ChooseInterfaceType(vmi *api.VMI, option string, requested binding.InterfaceType, netAdmin bool) (binding.InterfaceType, error) {
	var tapNICs []string
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		if i.Bridge != nil || i.Masquerade != nil {
			tapNICs = append(tapNICs, i.Name)
		}
	}
	switch {
	case len(tapNICs) == 0:
		return requested, nil
	case requested == "" && netAdmin:
		return binding.InterfaceBridge, nil
	case requested == "":
		return binding.InterfaceEthernet, nil
	case requested == binding.InterfaceBridge && !netAdmin:
		return "", fmt.Errorf("%s %q: libvirt creates the tap of <interface type='bridge'> itself, which %w, "+
			"and this process has not got it (interfaces %s); use %q (the tap phase1 made) or leave the option unset",
			option, requested, ErrNeedsNetAdmin, strings.Join(tapNICs, ", "), binding.InterfaceEthernet)
	}
	return requested, nil
}
