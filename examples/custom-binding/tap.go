// Package tapbinding is a network binding written the way a module outside
// virtnet would write one: it imports only virtnet's public packages
// (api, binding, cache, netdriver) and libvirtxml, and it is registered
// under a KubeVirt 1.x binding plugin name.
//
// The binding, "example-tap", gives the VM a tap of its own next to the
// pod link, with the pod link's MTU, and leaves the pod's network alone:
// no bridge, no address moved, no DHCP. Whatever the guest sends leaves
// through the tap into the pod namespace, where the operator routes it
// (this example does not). A VMI asks for it with
//
//	interfaces: [{name: default, binding: {name: example-tap}}]
//
// and the launcher registers it next to virtnet's own bindings:
//
//	reg := registry.Default()
//	reg[tapbinding.Name] = tapbinding.Binding{}
//	phase1.Run(ctx, vmi, netns, store, phase1.Options{Registry: reg})
//	prestart.Hook{…, Registry: reg}.Run(ctx)
//
// Phase1 discovers the pod link (it must exist; its MTU is recorded),
// creates the tap owned by the VM's QEMU user and marks it with
// binding.Mark, so that Cleanup and a re-run after a crash touch only a
// tap this binding made; phase2 renders <interface type='ethernet'> on
// it. Every step is idempotent: phase1 may be re-run after a failure at
// any point.
package tapbinding

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// Name is the binding's plugin name: the key it is registered under and
// the name a VMI interface gives in binding: {name: …}.
const Name = "example-tap"

// Binding is the example-tap binding. The zero value is ready to use.
type Binding struct{}

var _ binding.Binding = Binding{}

// Method implements [binding.Binding]: the registry key.
func (Binding) Method() string { return Name }

// NeedsRecord implements [binding.Binding]: Render needs the tap's name
// and MTU.
func (Binding) NeedsRecord() bool { return true }

// ForeignTapError is a link under the tap's name that this binding did not
// create.
type ForeignTapError struct {
	Link string
	Type string
}

func (e *ForeignTapError) Error() string {
	return fmt.Sprintf("link %q (%s) is not a tap this binding made: refusing to touch it", e.Link, e.Type)
}

// Permanent reports that a retry does not help: someone else owns the
// name (phase1.Error.Permanent asks).
func (e *ForeignTapError) Permanent() bool { return true }

// Discover implements [binding.Phase1]: the pod link as the CNI left it
// (only its name, MAC and MTU matter here).
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := d.LinkByName(in.Names.Pod)
	if err != nil {
		return nil, &binding.PodLinkError{Name: in.Names.Pod, Reason: "the pod link is required", Err: err}
	}
	mac, _ := cache.MACFrom(l.MAC)
	return &cache.Link{Name: l.Name, Type: l.Type, MAC: mac, MTU: l.MTU}, nil
}

// Plan implements [binding.Phase1]: the record names the tap and carries
// the pod link's MTU and the VM's MAC (the VMI's, or none: libvirt then
// picks one).
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("no discovery of the pod link")
	}
	mac, err := cache.ParseMAC(in.Pair.Interface.MacAddress)
	if err != nil {
		return nil, &api.FieldError{Path: "macAddress", Value: in.Pair.Interface.MacAddress, Reason: err.Error()}
	}
	return &cache.Interface{
		Interface:    in.Pair.Interface.Name,
		PodInterface: in.Pair.PodInterface,
		Binding:      Name,
		Tap:          in.Names.Tap,
		MAC:          mac,
		MTU:          link.MTU,
		IPAMDisabled: true,
	}, nil
}

// Prepare implements [binding.Phase1]: `ip tuntap add TAP mode tap user
// U group U`, `ip link property add dev TAP altname MARK`, `ip link set
// TAP mtu MTU up`, each skipped when already so.
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mark := in.Mark(netdriver.TypeTuntap)
	l, err := d.LinkByName(rec.Tap)
	created := false
	switch {
	case netdriver.IsLinkNotFound(err):
		created = true
		if err := d.AddTap(netdriver.Tap{Name: rec.Tap, Owner: in.TapOwner, Group: in.TapOwner, MTU: rec.MTU}); err != nil {
			return fmt.Errorf("create tap %q: %w", rec.Tap, err)
		}
		if l, err = d.LinkByName(rec.Tap); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if !slices.Contains(l.AltNames, mark) {
		if !created && !asCreated(l, in) {
			return &ForeignTapError{Link: l.Name, Type: l.Type}
		}
		if err := d.AddAltName(rec.Tap, mark); err != nil {
			err = fmt.Errorf("mark tap %q: %w", rec.Tap, err)
			if created {
				// No unmarked tap of this run stays behind: a rollback's
				// Cleanup would not know it for its own.
				if derr := d.DeleteLink(rec.Tap); derr != nil {
					err = errors.Join(err, fmt.Errorf("delete unmarked tap %q: %w", rec.Tap, derr))
				}
			}
			return err
		}
	}
	if l.MTU != rec.MTU {
		if err := d.SetMTU(rec.Tap, rec.MTU); err != nil {
			return err
		}
	}
	if !l.Up {
		return d.SetUp(rec.Tap)
	}
	return nil
}

// Cleanup implements [binding.Phase1]: deletes the tap when it carries
// this binding's mark; a missing tap is no error, a foreign one is kept.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tap := in.Names.Tap
	if rec != nil && rec.Tap != "" {
		tap = rec.Tap
	}
	l, err := d.LinkByName(tap)
	if netdriver.IsLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !slices.Contains(l.AltNames, in.Mark(netdriver.TypeTuntap)) && !asCreated(l, in) {
		in.Logger.Warn("keeping a tap this binding did not make", "link", tap)
		return nil
	}
	return d.DeleteLink(tap)
}

// asCreated reports whether an unmarked link is this binding's tap as
// AddTap leaves it, before the mark: a run killed or failed between the
// two calls leaves one. Only a resumed run (its records existed before it
// started) or a Cleanup (binding.Input.Resumed) takes it for its own.
func asCreated(l *netdriver.Link, in binding.Input) bool {
	return in.Resumed && l.Type == netdriver.TypeTuntap && !l.Up && l.Master == "" &&
		l.TapOwner == in.TapOwner && l.TapGroup == in.TapOwner
}
