package kvplugin

import (
	"context"
	"fmt"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

// HandOff is the hook sidecar's source of records (a phase2.Records; this
// package does not import phase2, which the CNI plugin does not link):
// the record the CNI plugin left on the interface's tap ([ReadRecord]) in
// the network namespace at NetNS, with the VM's MAC as KubeVirt v1.9.0
// gives it.
type HandOff struct {
	// NetNS is the pod's network namespace; "" is the caller's.
	NetNS string
	// Plugins maps each interface to its plugin's name ([Resolved]'s), for
	// the error of a missing record; it may be nil.
	Plugins map[string]string
}

// Record reads the pair's hand-off record and gives it the VM's MAC: for
// masquerade, the stable MAC of the VMI's UID (the CNI plugin does not know
// the VMI; the MAC then survives a migration to another pod); for bridge,
// the pod link's as the CNI plugin took it, unless status.interfaces has
// another (the VM's MAC on its previous pod, after a migration); in both,
// the spec's macAddress first.
func (h HandOff) Record(_ context.Context, vmi *api.VMI, pair api.Pair) (*cache.Interface, error) {
	rec, err := h.record(vmi, pair)
	if err != nil {
		name := fmt.Sprintf("%q", pair.Interface.Name)
		if plugin, ok := h.Plugins[pair.Interface.Name]; ok {
			name += " (plugin " + plugin + ")"
		}
		return nil, fmt.Errorf("interface %s: %w (did virtnet-binding-cni run for it? see the networkAttachmentDefinition of the plugin)", name, err)
	}
	return rec, nil
}

func (h HandOff) record(vmi *api.VMI, pair api.Pair) (*cache.Interface, error) {
	m := pair.Binding()
	src, err := ReadRecord(h.NetNS, m, pair.PodInterface, pair.Primary())
	if err != nil {
		return nil, err
	}
	rec := src.Record
	rec.Interface = pair.Interface.Name
	// Both MACs below are 6 bytes by construction (VMMAC builds one,
	// StatusMAC refuses any other length), so MACFrom cannot refuse them.
	switch m {
	case api.BindingMasquerade:
		rec.MAC, _ = cache.MACFrom(names.VMMAC(vmi.Metadata.UID, pair.Interface.Name))
	case api.BindingBridge:
		hw, err := vmi.StatusMAC(pair.Interface.Name)
		if err != nil {
			return nil, err
		}
		if hw != nil {
			rec.MAC, _ = cache.MACFrom(hw)
		}
	}
	if pair.Interface.MacAddress != "" {
		if rec.MAC, err = cache.ParseMAC(pair.Interface.MacAddress); err != nil {
			return nil, &api.FieldError{Path: "macAddress", Value: pair.Interface.MacAddress, Reason: err.Error()}
		}
	}
	return rec, nil
}
