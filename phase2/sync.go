package phase2

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/domxml"
)

// Op is what a launcher does with one device of a running domain.
type Op string

// The operations of a [DeviceChange], each one libvirt call with
// VIR_DOMAIN_AFFECT_LIVE (virsh attach-device, detach-device,
// update-device --live).
const (
	// OpAttach: virDomainAttachDeviceFlags.
	OpAttach Op = "attach"
	// OpDetach: virDomainDetachDeviceFlags.
	OpDetach Op = "detach"
	// OpUpdate: virDomainUpdateDeviceFlags (the link state).
	OpUpdate Op = "update"
)

// DeviceChange is one device to attach to, detach from or update on a
// running domain.
type DeviceChange struct {
	Op Op
	// Interface is the VMI interface's name.
	Interface string
	// Alias is the device's alias (binding.DeviceAlias).
	Alias string
	// XML is one <interface> or <hostdev> element: the rendered device
	// to attach, the running domain's own device to detach, or the
	// running device with its new <link state=…/> to update.
	XML string
}

// DHCP starts and stops the DHCP server of one interface. [Sync] starts
// the server of an interface before its device is attached, so that the
// guest's first request is answered, and stops it once the interface is
// absent. [*DHCPServers] is the one implementation (prestart's Running
// and the binding sidecar run theirs on it).
type DHCP interface {
	// Start starts (or keeps) the server of the item, if its binding
	// serves DHCP and its record has IPAM; it returns once the server
	// is bound.
	Start(ctx context.Context, vmi *api.VMI, it Item) error
	// Stop stops the interface's server, if it has one.
	Stop(iface string) error
	// Stale reports whether the interface's bridge (its record's, when
	// Start was called for it, with a server or without one) is gone or
	// another link under its name now (false for an interface not
	// started): phase1 made the interface again under the running VM.
	Stale(iface string) (bool, error)
}

// Sync is a live update of a running VM's network: it compares the
// running domain (its XML as libvirt gives it, with aliases) with the VMI
// and returns, in spec.domain.devices.interfaces order, the device of
// every interface to attach (in the VMI, present, not in the domain), to
// detach (state: absent, still in the domain) or to update (its link
// state differs: state: down or up). A running domain with two devices of
// one alias is refused as [Render] refuses it.
//
// A device the domain has is compared with what the interface's records
// name now, not only by alias: when it is attached elsewhere (another
// interface type, bridge, tap or macvtap, another MAC) or its interface
// was made again under it (the bridge it was started with is gone or
// another link: [DHCP.Stale]; phase1 unplugged and plugged it between two
// Syncs),
// it is replugged: a detach of the running device followed by an attach
// of the new one, its DHCP server restarted on the new bridge (the
// launcher waits until libvirt has removed the detached device, its
// VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED event, before it attaches the new one
// of the same alias).
//
// The devices to attach are rendered as [Render] renders them at start,
// from the records src gives ([CacheRecords]: an interface is attached
// only once phase1 finished it). With a non-nil dhcp, Sync starts the
// DHCP servers of the interfaces to attach and stops those of the
// interfaces to detach. Devices of the domain that are no VMI interface
// are left alone.
//
// Each interface's change stands alone: an interface whose record is
// missing, not ready or bad, whose device cannot be rendered or whose
// DHCP server cannot be started gets no change, and the changes of the
// others are returned with an error that joins those failures, each
// naming its interface (a launcher applies the changes and calls Sync
// again later). A running domain or VMI that cannot be read fails the
// whole call with no change; DHCP servers started before a failure stay.
//
// On a q35 machine every device to attach (not a replug, which frees the
// port it takes) needs a spare pcie-root-port of the running domain
// ([domxml.Options.HotplugPorts]): the attaches beyond the spare ports, in
// spec.domain.devices.interfaces order, get no change and no DHCP server,
// and come back as one [*HotplugPortError] naming them.
func Sync(ctx context.Context, runningXML string, vmi *api.VMI, src Records, dhcp DHCP, opts Options) ([]DeviceChange, error) {
	var running libvirtxml.Domain
	if err := running.Unmarshal(runningXML); err != nil {
		return nil, fmt.Errorf("phase2: running domain XML: %w", err)
	}
	have, err := devicesByAlias(&running)
	if err != nil {
		return nil, err
	}
	all, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	reg := opts.registry()
	present, absent := api.Present(all)
	slices.SortFunc(present, func(a, b api.Pair) int { return a.Index - b.Index })
	slices.SortFunc(absent, func(a, b api.Pair) int { return a.Index - b.Index })

	// plan is the change of one interface.
	type plan struct {
		it      Item
		changes []DeviceChange
		// start: its DHCP server is started (attach) or restarted
		// (replug) before the changes are returned.
		start, restart bool
	}
	var plans []plan
	var failed []error
	for _, p := range present {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := p.Interface.Name
		it, w, err := renderOne(ctx, vmi, p, reg, src, opts)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		alias := binding.DeviceAlias(it.Binding, name)
		h, isRunning := have[alias]
		attach := func() (DeviceChange, error) {
			x, err := w.marshal()
			if err != nil {
				return DeviceChange{}, fmt.Errorf("phase2: interface %q: %w", name, err)
			}
			return DeviceChange{Op: OpAttach, Interface: name, Alias: alias, XML: x}, nil
		}
		pl := plan{it: it}
		elsewhere := isRunning && attachedElsewhere(h, w)
		if isRunning && !elsewhere && dhcp != nil {
			stale, err := dhcp.Stale(name)
			if err != nil {
				failed = append(failed, fmt.Errorf("phase2: interface %q: %w", name, err))
				continue
			}
			elsewhere = stale
		}
		switch {
		case !isRunning:
			c, err := attach()
			if err != nil {
				failed = append(failed, err)
				continue
			}
			pl.changes, pl.start = []DeviceChange{c}, true
		case elsewhere:
			x, err := h.marshal()
			if err != nil {
				failed = append(failed, fmt.Errorf("phase2: interface %q: %w", name, err))
				continue
			}
			c, err := attach()
			if err != nil {
				failed = append(failed, err)
				continue
			}
			pl.changes = []DeviceChange{{Op: OpDetach, Interface: name, Alias: alias, XML: x}, c}
			pl.start, pl.restart = true, true
		case h.iface != nil && w.iface != nil && linkState(h.iface) != linkState(w.iface):
			upd := *h.iface
			upd.Link = &libvirtxml.DomainInterfaceLink{State: linkState(w.iface)}
			x, err := upd.Marshal()
			if err != nil {
				failed = append(failed, fmt.Errorf("phase2: interface %q: %w", name, err))
				continue
			}
			pl.changes = []DeviceChange{{Op: OpUpdate, Interface: name, Alias: alias, XML: x}}
		}
		if len(pl.changes) > 0 {
			plans = append(plans, pl)
		}
	}
	plans, err = budgetHotplugPorts(&running, plans, func(pl plan) (string, bool) {
		return pl.it.Pair.Interface.Name, pl.start && !pl.restart
	})
	if err != nil {
		failed = append(failed, err)
	}
	var changes []DeviceChange
	for _, pl := range plans {
		if dhcp != nil && pl.start {
			name := pl.it.Pair.Interface.Name
			if pl.restart {
				// The old server, bound to a link that may be gone, may
				// have failed for it: the new one replaces it.
				_ = dhcp.Stop(name)
			}
			if err := dhcp.Start(ctx, vmi, pl.it); err != nil {
				failed = append(failed, fmt.Errorf("phase2: interface %q: DHCP server: %w", name, err))
				continue
			}
		}
		changes = append(changes, pl.changes...)
	}
	for _, p := range absent {
		name := p.Interface.Name
		b, err := reg.Lookup(p.Binding())
		if err != nil {
			failed = append(failed, fmt.Errorf("phase2: interface %q: %w", name, err))
			continue
		}
		alias := binding.DeviceAlias(b, name)
		h, ok := have[alias]
		if !ok {
			continue
		}
		x, err := h.marshal()
		if err != nil {
			failed = append(failed, fmt.Errorf("phase2: interface %q: %w", name, err))
			continue
		}
		changes = append(changes, DeviceChange{Op: OpDetach, Interface: name, Alias: alias, XML: x})
		if dhcp != nil {
			if err := dhcp.Stop(name); err != nil {
				failed = append(failed, fmt.Errorf("phase2: interface %q: stop DHCP server: %w", name, err))
			}
		}
	}
	return changes, joinErrors(failed)
}

// renderOne reads the record of a present pair and renders its device.
func renderOne(ctx context.Context, vmi *api.VMI, p api.Pair, reg binding.Registry, src Records, opts Options) (Item, device, error) {
	name := p.Interface.Name
	b, err := reg.Lookup(p.Binding())
	if err != nil {
		return Item{}, device{}, fmt.Errorf("phase2: interface %q: %w", name, err)
	}
	it := Item{Pair: p, Binding: b}
	if b.NeedsRecord() {
		if it.Record, err = src.Record(ctx, vmi, p); err != nil {
			return Item{}, device{}, err
		}
	}
	want := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := renderItems(vmi, []Item{it}, want, opts.Render); err != nil {
		return Item{}, device{}, err
	}
	rendered, err := devicesByAlias(want)
	if err != nil {
		return Item{}, device{}, err
	}
	alias := binding.DeviceAlias(b, name)
	w, ok := rendered[alias]
	if !ok {
		return Item{}, device{}, fmt.Errorf("phase2: interface %q: %s %w: no device with alias %q rendered", name, b.Method(), ErrRender, alias)
	}
	return it, w, nil
}

// attachedElsewhere reports whether the running device h is attached to
// other links than the rendered w names: another interface type, bridge,
// tap (type ethernet: libvirt's own tap of type bridge is not phase1's),
// macvtap or MAC.
func attachedElsewhere(h, w device) bool {
	if h.iface == nil || w.iface == nil {
		return false
	}
	hi, wi := h.iface, w.iface
	hk, wk := domxml.InterfaceType(hi), domxml.InterfaceType(wi)
	switch {
	case hk != wk:
		return true
	case (hi.MAC == nil) != (wi.MAC == nil), hi.MAC != nil && !strings.EqualFold(hi.MAC.Address, wi.MAC.Address):
		return true
	case hk == "bridge":
		return hi.Source.Bridge.Bridge != wi.Source.Bridge.Bridge
	case hk == "ethernet":
		return targetDev(hi) != targetDev(wi)
	case hk == "direct":
		return hi.Source.Direct.Dev != wi.Source.Direct.Dev
	}
	return false
}

func targetDev(i *libvirtxml.DomainInterface) string {
	if i.Target == nil {
		return ""
	}
	return i.Target.Dev
}

// joinErrors is errors.Join, but the one error itself when there is one.
func joinErrors(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// device is an <interface> or a <hostdev> of a domain.
type device struct {
	iface   *libvirtxml.DomainInterface
	hostdev *libvirtxml.DomainHostdev
}

func (d device) marshal() (string, error) {
	if d.iface != nil {
		return d.iface.Marshal()
	}
	return d.hostdev.Marshal()
}

// devicesByAlias indexes a domain's interfaces and host devices by alias;
// a domain whose aliases break [deviceAliases]' rule (the one of
// [Render]) is refused.
func devicesByAlias(dom *libvirtxml.Domain) (map[string]device, error) {
	ifaces, hostdevs, err := deviceAliases(dom)
	if err != nil {
		return nil, err
	}
	out := map[string]device{}
	for a, i := range ifaces {
		out[a] = device{iface: &dom.Devices.Interfaces[i]}
	}
	for a, i := range hostdevs {
		out[a] = device{hostdev: &dom.Devices.Hostdevs[i]}
	}
	return out, nil
}

// linkState is an interface's link state: "down" or "up" (no <link>).
func linkState(i *libvirtxml.DomainInterface) string {
	if i.Link != nil && i.Link.State == "down" {
		return "down"
	}
	return "up"
}
