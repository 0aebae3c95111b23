package sriov

import (
	"fmt"
	"strings"

	"github.com/virtnet/virtnet/api"
)

// SimulatedResource is the resource [SimulatedEnv] gives every SR-IOV
// interface.
const SimulatedResource = "intel.com/sriov_netdevice"

// SimulatedEnv fabricates the environment the SR-IOV device plugin and
// virt-controller would give a launcher of vmi: every SR-IOV interface
// (in spec.domain.devices.interfaces order) on [SimulatedResource], whose
// PCIDEVICE_ variable lists one VF per interface, 0000:81:10.0,
// 0000:81:10.1, … (eight functions per slot). It is for running examples
// without SR-IOV hardware; nil when the VMI has no SR-IOV interface.
func SimulatedEnv(vmi *api.VMI) map[string]string {
	var addrs []string
	env := map[string]string{}
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.SRIOV == nil {
			continue
		}
		n := len(addrs)
		addrs = append(addrs, fmt.Sprintf("0000:81:%02x.%d", 0x10+n/8, n%8))
		env[ResourceEnvVar(iface.Name)] = SimulatedResource
	}
	if len(addrs) == 0 {
		return nil
	}
	env[PCIDeviceEnvVar(SimulatedResource)] = strings.Join(addrs, ",")
	return env
}
