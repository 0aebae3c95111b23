package phase2

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
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
}

// Sync is a live update of a running VM's network: it compares the
// running domain (its XML as libvirt gives it, with aliases) with the VMI
// and returns, in spec.domain.devices.interfaces order, the device of
// every interface to attach (in the VMI, present, not in the domain), to
// detach (state: absent, still in the domain) or to update (its link
// state differs: state: down or up). The devices to attach are rendered
// as [Render] renders them at start, from the records src gives
// ([CacheRecords]: an interface is attached only once phase1 finished
// it). With a non-nil dhcp, Sync starts the DHCP servers of the interfaces
// to attach and stops those of the interfaces to detach. Devices of the domain that
// are no VMI interface are left alone.
//
// On a q35 machine every device to attach needs a spare pcie-root-port
// of the running domain ([domxml.Options.HotplugPorts]); without one
// for each, Sync returns a [*HotplugPortError] and no change.
//
// Errors: a [*HotplugPortError]; an [*api.FieldError] for the VMI; a
// [*MissingCacheError] or [*NotReadyError] while phase1 has not finished
// an interface to attach (retry after phase1); a [*RenderError]; a
// [*binding.UnknownMethodError] (wrapped); the running XML's or a DHCP
// server's error, wrapped with the interface's name. On failure no
// change is returned and nothing is changed, except that the DHCP
// servers Start already started (or kept) for earlier interfaces to
// attach stay up when a later one fails: the next Sync, which returns
// their attach again, keeps them; a launcher that gives up stops them
// with [DHCP.Stop]. A failure to stop a server of an interface to
// detach comes back with the changes (the device is still to detach).
func Sync(ctx context.Context, runningXML string, vmi *api.VMI, src Records, dhcp DHCP, opts Options) ([]DeviceChange, error) {
	var running libvirtxml.Domain
	if err := running.Unmarshal(runningXML); err != nil {
		return nil, fmt.Errorf("phase2: running domain XML: %w", err)
	}
	all, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	items, err := Items(ctx, vmi, all, src, opts)
	if err != nil {
		return nil, err
	}
	want := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := renderItems(vmi, items, want, opts.Render); err != nil {
		return nil, err
	}
	have := devicesByAlias(&running)
	rendered := devicesByAlias(want)

	var changes []DeviceChange
	var attach []Item
	for _, it := range items {
		name := it.Pair.Interface.Name
		alias := binding.DeviceAlias(it.Binding, name)
		w, ok := rendered[alias]
		if !ok {
			return nil, &RenderError{Interface: name, Binding: it.Binding.Method(), Err: fmt.Errorf("no device with alias %q rendered", alias)}
		}
		h, running := have[alias]
		switch {
		case !running:
			x, err := w.marshal()
			if err != nil {
				return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
			}
			changes = append(changes, DeviceChange{Op: OpAttach, Interface: name, Alias: alias, XML: x})
			attach = append(attach, it)
		case h.iface != nil && w.iface != nil && linkState(h.iface) != linkState(w.iface):
			upd := *h.iface
			upd.Link = &libvirtxml.DomainInterfaceLink{State: linkState(w.iface)}
			x, err := upd.Marshal()
			if err != nil {
				return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
			}
			changes = append(changes, DeviceChange{Op: OpUpdate, Interface: name, Alias: alias, XML: x})
		}
	}
	var detach []string
	reg := opts.registry()
	_, absent := api.Present(all)
	slices.SortFunc(absent, func(a, b api.Pair) int { return a.Index - b.Index })
	for _, p := range absent {
		name := p.Interface.Name
		b, err := reg.Lookup(p.Binding())
		if err != nil {
			return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
		}
		alias := binding.DeviceAlias(b, name)
		h, ok := have[alias]
		if !ok {
			continue
		}
		x, err := h.marshal()
		if err != nil {
			return nil, fmt.Errorf("phase2: interface %q: %w", name, err)
		}
		changes = append(changes, DeviceChange{Op: OpDetach, Interface: name, Alias: alias, XML: x})
		detach = append(detach, name)
	}
	attaching := make([]string, len(attach))
	for i, it := range attach {
		attaching[i] = it.Pair.Interface.Name
	}
	if err := checkHotplugPorts(&running, attaching); err != nil {
		return nil, err
	}
	if dhcp == nil {
		return changes, nil
	}
	for _, it := range attach {
		if err := dhcp.Start(ctx, vmi, it); err != nil {
			return nil, fmt.Errorf("phase2: interface %q: DHCP server: %w", it.Pair.Interface.Name, err)
		}
	}
	var errs []error
	for _, name := range detach {
		if err := dhcp.Stop(name); err != nil {
			errs = append(errs, fmt.Errorf("phase2: interface %q: stop DHCP server: %w", name, err))
		}
	}
	return changes, errors.Join(errs...)
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

// devicesByAlias indexes a domain's interfaces and host devices by alias.
func devicesByAlias(dom *libvirtxml.Domain) map[string]device {
	out := map[string]device{}
	if dom.Devices == nil {
		return out
	}
	for i := range dom.Devices.Interfaces {
		if a := dom.Devices.Interfaces[i].Alias; a != nil {
			out[a.Name] = device{iface: &dom.Devices.Interfaces[i]}
		}
	}
	for i := range dom.Devices.Hostdevs {
		if a := dom.Devices.Hostdevs[i].Alias; a != nil {
			out[a.Name] = device{hostdev: &dom.Devices.Hostdevs[i]}
		}
	}
	return out
}

// linkState is an interface's link state: "down" or "up" (no <link>).
func linkState(i *libvirtxml.DomainInterface) string {
	if i.Link != nil && i.Link.State == "down" {
		return "down"
	}
	return "up"
}
