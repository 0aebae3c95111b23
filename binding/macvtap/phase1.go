package macvtap

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// NeedsRecord is true: Render needs the macvtap's name, MAC and MTU.
func (Binding) NeedsRecord() bool { return true }

// Discover reads the macvtap link named after the pod interface
// (`ip -d link show net1`). It fails with the driver's
// *netdriver.LinkNotFoundError when there is none and an error matching
// [ErrWrongType] when the link is not a macvtap.
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := in.Pair.PodInterface
	l, err := d.LinkByName(name)
	if err != nil {
		return nil, fmt.Errorf("discover pod link %q: %w", name, err)
	}
	if l.Type != netdriver.TypeMacvtap {
		return nil, fmt.Errorf("pod link %q is of type %q, %w", name, l.Type, ErrWrongType)
	}
	in.Logger.Debug("discovered macvtap", "interface", in.Pair.Interface.Name, "link", name,
		"ifindex", l.Index, "mac", l.MAC.String(), "mtu", l.MTU, "mode", l.MacvtapMode)
	mac, _ := cache.MACFrom(l.MAC)
	return &cache.Link{Name: l.Name, Type: l.Type, MAC: mac, MTU: l.MTU, Ifindex: l.Index}, nil
}

// Plan records the macvtap as the VM's target, with the VM's MAC (the
// interface's macAddress, else the link's).
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("plan without a discovered link")
	}
	mac := link.MAC
	if m := in.Pair.Interface.MacAddress; m != "" {
		var err error
		if mac, err = cache.ParseMAC(m); err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrMAC, m, err)
		}
	}
	return &cache.Interface{
		Version:      cache.Version,
		Interface:    in.Pair.Interface.Name,
		PodInterface: in.Pair.PodInterface,
		Binding:      in.Pair.Binding(),
		Target:       link.Name,
		Ifindex:      link.Ifindex,
		MAC:          mac,
		MTU:          link.MTU,
	}, nil
}

// Prepare gives the macvtap the VM's MAC when it has another one
// (`ip link set net1 address MAC`); see the package doc for why.
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if rec == nil || rec.Target == "" {
		return errNoRecord
	}
	return setMAC(ctx, d, in, rec.Target, rec.MAC)
}

// Cleanup gives the macvtap back its discovered MAC. A missing link or a
// pair that was never discovered is not an error.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if link == nil {
		return nil
	}
	err := setMAC(ctx, d, in, link.Name, link.MAC)
	if netdriver.IsLinkNotFound(err) {
		return nil
	}
	return err
}

func setMAC(ctx context.Context, d netdriver.Driver, in binding.Input, name string, mac cache.MAC) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !mac.IsValid() {
		return fmt.Errorf("%w \"\": no MAC address", ErrMAC)
	}
	want := mac.HardwareAddr()
	l, err := d.LinkByName(name)
	if err != nil {
		return fmt.Errorf("read link %q: %w", name, err)
	}
	if l.MAC.String() == want.String() {
		return nil
	}
	in.Logger.Info("setting macvtap MAC", "interface", in.Pair.Interface.Name, "link", name, "from", l.MAC.String(), "to", want.String())
	if err := d.SetMAC(name, want); err != nil {
		return fmt.Errorf("set MAC of %q to %s: %w", name, want, err)
	}
	return nil
}
