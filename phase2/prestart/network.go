package prestart

import (
	"context"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
)

// Network is the network step: the interfaces ([phase2.Render]: a device
// the domain has already, found by its alias, is replaced in place) and a
// DHCP server for every interface whose binding asks for one
// ([binding.DHCPServer]) and whose record has IPAM ([phase2.DHCPServers]).
type Network struct{}

// Name is "network".
func (Network) Name() string { return "network" }

// Run enriches the domain and starts the DHCP servers; it returns once
// every server is bound, or with the first that could not bind.
func (Network) Run(ctx context.Context, st *State) error {
	h := st.Hook
	pairs, err := api.Pairs(h.VMI)
	if err != nil {
		return err
	}
	items, err := phase2.Items(ctx, h.VMI, pairs, st.records(), phase2.Options{Registry: h.Registry})
	if err != nil {
		return err
	}
	if err := phase2.Render(h.VMI, items, h.Domain, st.Render); err != nil {
		return err
	}
	st.Log.Info("interfaces rendered into the domain", "count", len(items))
	if n := h.Dirs.HotplugPorts; n != domxml.HotplugPortsNone {
		// The interfaces may have taken spare root ports Build reserved.
		if err := domxml.ReserveHotplugPorts(h.VMI, h.Domain, n); err != nil {
			return err
		}
	}
	for _, it := range items {
		if err := st.dhcp.Start(ctx, h.VMI, it); err != nil {
			return err
		}
	}
	return nil
}

// records is where the hook reads the records: [Hook.Records], or
// phase1's cache in [Hook.Store].
func (st *State) records() phase2.Records {
	if st.Hook.Records != nil {
		return st.Hook.Records
	}
	return phase2.CacheRecords{Store: st.Hook.Store}
}

// DHCP is the live update's DHCP starter ([phase2.Sync]): the run's
// [phase2.DHCPServers], which start and stop the servers of single
// interfaces beside the ones the run started, in the same namespace, with
// the same resolv.conf and hostname. A server serves until it is stopped,
// [Running.Stop] or the end of the context given to [Hook.Run].
func (r *Running) DHCP() phase2.DHCP { return r.st.dhcp }

// Sync is [phase2.Sync] for the VM this run started: the same records
// source, registry and render choices (the interface type chosen at
// start) as the network step, and its DHCP servers ([Running.DHCP]). A
// launcher calls it with the running domain's XML whenever the VMI
// changes, and applies the changes it returns with libvirt.
func (r *Running) Sync(ctx context.Context, runningXML string, vmi *api.VMI) ([]phase2.DeviceChange, error) {
	h := r.st.Hook
	return phase2.Sync(ctx, runningXML, vmi, r.st.records(), r.st.dhcp, phase2.Options{Registry: h.Registry, Render: r.st.Render})
}
