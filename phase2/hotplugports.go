package phase2

import (
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/domxml"
)

// HotplugPortError is an attach [Sync] refuses: the running q35 domain
// has fewer spare pcie-root-port controllers than the devices to attach
// need (one each), so libvirt would fail to attach them, or attach some
// and not the others. The domain was started with too few spare ports
// (domxml.Options.HotplugPorts: [domxml.HotplugPortsNone], or a small
// count); only a restart of the VM, with more, makes room. A launcher
// reports it on the VMI and does not retry.
type HotplugPortError struct {
	// Interfaces are the VMI interfaces Sync would attach beyond the
	// spare ports, in spec.domain.devices.interfaces order.
	Interfaces []string
	// Free is the number of spare root ports of the running domain
	// ([domxml.SpareRootPorts]).
	Free int
}

func (e *HotplugPortError) Error() string {
	return fmt.Sprintf("phase2: cannot hot-plug interface %s: the running domain has %d spare pcie-root-port(s), all taken by earlier devices "+
		"(it was started with too few: domxml.Options.HotplugPorts); restart the VM to plug it",
		strings.Join(e.Interfaces, ", "), e.Free)
}

// Permanent reports true: the running domain cannot gain root ports.
func (e *HotplugPortError) Permanent() bool { return true }

// budgetHotplugPorts keeps the plans a running q35 domain has spare root
// ports for: each plan that attach says is a new device takes one, in
// order; the new devices beyond the spare ports are dropped and named in
// a [*HotplugPortError]. Other machines plug into a PCI bus's free slots,
// which libvirt finds.
func budgetHotplugPorts[P any](running *libvirtxml.Domain, plans []P, attach func(P) (string, bool)) ([]P, error) {
	if running.OS == nil || running.OS.Type == nil || !strings.Contains(running.OS.Type.Machine, "q35") {
		return plans, nil
	}
	free := domxml.SpareRootPorts(running)
	var kept []P
	var refused []string
	for _, pl := range plans {
		name, isNew := attach(pl)
		switch {
		case !isNew:
			kept = append(kept, pl)
		case free > 0:
			free--
			kept = append(kept, pl)
		default:
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		return kept, &HotplugPortError{Interfaces: refused, Free: domxml.SpareRootPorts(running)}
	}
	return kept, nil
}
