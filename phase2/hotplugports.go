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
	// Interfaces are the VMI interfaces Sync would attach, in
	// spec.domain.devices.interfaces order.
	Interfaces []string
	// Free is the number of spare root ports of the running domain
	// ([domxml.SpareRootPorts]).
	Free int
}

func (e *HotplugPortError) Error() string {
	return fmt.Sprintf("phase2: cannot hot-plug interface %s: the running domain has %d spare pcie-root-port for %d device(s) "+
		"(it was started with too few: domxml.Options.HotplugPorts); restart the VM to plug it",
		strings.Join(e.Interfaces, ", "), e.Free, len(e.Interfaces))
}

// Permanent reports true: the running domain cannot gain root ports.
func (e *HotplugPortError) Permanent() bool { return true }

// checkHotplugPorts refuses to attach the interfaces named to a running
// q35 domain without a spare root port for each. Other machines plug
// into a PCI bus's free slots, which libvirt finds.
func checkHotplugPorts(running *libvirtxml.Domain, attach []string) error {
	if len(attach) == 0 || running.OS == nil || running.OS.Type == nil || !strings.Contains(running.OS.Type.Machine, "q35") {
		return nil
	}
	if free := domxml.SpareRootPorts(running); free < len(attach) {
		return &HotplugPortError{Interfaces: attach, Free: free}
	}
	return nil
}
