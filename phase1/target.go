package phase1

import (
	"fmt"

	"github.com/virtnet/virtnet/api"
)

// checkTarget is what [Options.MigrationTarget] adds to the validation:
// every bridge-bound interface without a macAddress must have the MAC the
// source's VM has, which its status.interfaces entry holds. The bridge
// binding would otherwise give the VM the target pod link's MAC, and the
// target's DHCP server would answer that MAC, not the migrated vNIC's
// (KubeVirt's bugs #16696, #18621: a guest rebooted on the target gets no
// lease). Masquerade and passt need nothing: their VM MAC, gateway
// address and gateway MAC do not depend on the pod.
func checkTarget(vmi *api.VMI, pairs []api.Pair) error {
	for _, p := range pairs {
		if p.Binding() != api.BindingBridge || p.Interface.MacAddress != "" || p.Interface.Absent() {
			continue
		}
		hw, err := vmi.StatusMAC(p.Interface.Name)
		if err != nil {
			return &Error{Interface: p.Interface.Name, Step: StepValidate, Err: err}
		}
		if hw == nil {
			return &Error{Interface: p.Interface.Name, Step: StepValidate, Err: &api.FieldError{
				Path:   "status.interfaces",
				Value:  p.Interface.Name,
				Reason: fmt.Sprintf("a migration target needs the source VM's MAC of bridge interface %q (its status.interfaces entry's mac, or spec macAddress)", p.Interface.Name),
			}}
		}
	}
	return nil
}
