package dpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nlhandle"
	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

var nlModes = map[macvtap.Mode]netlink.MacvlanMode{
	macvtap.ModeBridge:   netlink.MACVLAN_MODE_BRIDGE,
	macvtap.ModeVEPA:     netlink.MACVLAN_MODE_VEPA,
	macvtap.ModePrivate:  netlink.MACVLAN_MODE_PRIVATE,
	macvtap.ModePassthru: netlink.MACVLAN_MODE_PASSTHRU,
}

// NetlinkKernel is the [Kernel] of a real host: rtnetlink requests in one
// network namespace. It is safe for concurrent use (the netlink handle
// serialises requests).
type NetlinkKernel struct {
	h *netlink.Handle
}

// NewNetlinkKernel opens a netlink handle in the namespace at nsPath ("" is
// the caller's own, as in a hostNetwork pod). Close it when done.
func NewNetlinkKernel(nsPath string) (*NetlinkKernel, error) {
	h, err := nlhandle.Open(nsPath)
	if err != nil {
		return nil, fmt.Errorf("macvtap device plugin: netlink in netns %q: %w", nsPath, err)
	}
	return &NetlinkKernel{h: h}, nil
}

// Close releases the netlink handle.
func (k *NetlinkKernel) Close() error {
	k.h.Close()
	return nil
}

func notFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

// LowerHealthy implements [Kernel] (`ip link show LOWER`: UP and LOWER_UP).
func (k *NetlinkKernel) LowerHealthy(_ context.Context, lower string) (bool, string, error) {
	l, err := k.h.LinkByName(lower)
	switch {
	case notFound(err):
		return false, "lower device " + lower + " not found", nil
	case err != nil:
		return false, "", err
	case l.Attrs().Flags&net.FlagUp == 0:
		return false, "lower device " + lower + " is down", nil
	case l.Attrs().RawFlags&unix.IFF_LOWER_UP == 0:
		return false, "lower device " + lower + " has no carrier", nil
	}
	return true, "", nil
}

// Ensure implements [Kernel]: `ip link add mvt… link LOWER txqueuelen N
// type macvtap mode MODE; ip link set mvt… up`.
func (k *NetlinkKernel) Ensure(ctx context.Context, s deviceplugin.Slot) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	lower, err := k.h.LinkByName(s.LowerDevice)
	if err != nil {
		return 0, fmt.Errorf("look up lower device %s: %w", s.LowerDevice, err)
	}
	mode := cmp.Or(s.Mode, macvtap.DefaultMode)
	if l, err := k.h.LinkByName(s.HostLink); err == nil {
		mv, ok := l.(*netlink.Macvtap)
		if !ok {
			// Not a macvtap: not this daemon's, whatever its name.
			return 0, fmt.Errorf("%s exists and is a %s link, not a macvtap this daemon made: refusing to replace it", s.HostLink, l.Type())
		}
		if mv.ParentIndex == lower.Attrs().Index && mv.Mode == nlModes[mode] {
			return k.up(l)
		}
		// Our macvtap on another lower device or mode (the
		// configuration changed): ip link del mvt…
		if err := k.h.LinkDel(l); err != nil && !notFound(err) {
			return 0, fmt.Errorf("replace %s (%s): %w", s.HostLink, l.Type(), err)
		}
	} else if !notFound(err) {
		return 0, err
	}
	la := netlink.NewLinkAttrs()
	la.Name = s.HostLink
	la.ParentIndex = lower.Attrs().Index
	la.TxQLen = lower.Attrs().TxQLen
	if err := k.h.LinkAdd(&netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: la, Mode: nlModes[mode]}}); err != nil {
		return 0, err
	}
	l, err := k.h.LinkByName(s.HostLink)
	if err != nil {
		return 0, err
	}
	return k.up(l)
}

func (k *NetlinkKernel) up(l netlink.Link) (int, error) {
	if err := k.h.LinkSetUp(l); err != nil {
		return 0, fmt.Errorf("set %s up: %w", l.Attrs().Name, err)
	}
	return l.Attrs().Index, nil
}

// Remove implements [Kernel] (`ip link del NAME`), for macvtaps only.
func (k *NetlinkKernel) Remove(_ context.Context, name string) error {
	l, err := k.h.LinkByName(name)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.Type() != "macvtap" {
		return fmt.Errorf("%s is a %s, not a macvtap: left alone", name, l.Type())
	}
	if err := k.h.LinkDel(l); err != nil && !notFound(err) {
		return err
	}
	return nil
}

// Exists implements [Kernel].
func (k *NetlinkKernel) Exists(_ context.Context, name string) (bool, error) {
	_, err := k.h.LinkByName(name)
	if notFound(err) {
		return false, nil
	}
	return err == nil, err
}
