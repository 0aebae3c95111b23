package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// nsHandle opens the server's namespace ("" is the current one: a nil
// handle).
func (s *Server) nsHandle() (*netns.NsHandle, error) {
	if s.netns == "" {
		return nil, nil
	}
	h, err := netns.GetFromPath(s.netns)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", s.netns, err)
	}
	return &h, nil
}

// waitLinkLocal returns a link-local address of link index that finished
// duplicate address detection, waiting for one on a netlink address
// subscription (the kernel adds it when the bridge gets a carrier). It
// returns ctx's error when ctx ends first.
func (s *Server) waitLinkLocal(ctx context.Context, index int) (netip.Addr, error) {
	ns, err := s.nsHandle()
	if err != nil {
		return netip.Addr{}, err
	}
	if ns != nil {
		defer ns.Close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan netlink.AddrUpdate, 16)
	errc := make(chan error, 1)
	opts := netlink.AddrSubscribeOptions{
		Namespace:    ns,
		ListExisting: true,
		ErrorCallback: func(err error) {
			select {
			case errc <- err:
			default:
			}
			cancel()
		},
	}
	if err := netlink.AddrSubscribeWithOptions(ch, ctx.Done(), opts); err != nil {
		return netip.Addr{}, fmt.Errorf("subscribe to addresses: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			select {
			case err := <-errc:
				return netip.Addr{}, fmt.Errorf("address subscription: %w", err)
			default:
				return netip.Addr{}, ctx.Err()
			}
		case u, ok := <-ch:
			if !ok {
				if ctx.Err() != nil {
					continue
				}
				return netip.Addr{}, fmt.Errorf("address subscription ended")
			}
			if u.LinkIndex != index {
				continue
			}
			a, ok := netip.AddrFromSlice(u.LinkAddress.IP)
			if !ok || !a.Is6() || !a.IsLinkLocalUnicast() {
				continue
			}
			if u.NewAddr && u.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 {
				return a, nil
			}
		}
	}
}

// neighbors returns a lookup of the MAC the namespace's neighbour table
// holds for an IPv6 address on link index, and a function closing it.
func (s *Server) neighbors(index int) (func(netip.Addr) net.HardwareAddr, func(), error) {
	ns, err := s.nsHandle()
	if err != nil {
		return nil, nil, err
	}
	var h *netlink.Handle
	if ns == nil {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	} else {
		h, err = netlink.NewHandleAt(*ns, unix.NETLINK_ROUTE)
		ns.Close()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("netlink: %w", err)
	}
	lookup := func(ip netip.Addr) net.HardwareAddr {
		ns, err := h.NeighList(index, unix.AF_INET6)
		if err != nil {
			return nil
		}
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a == ip.WithZone("") && len(n.HardwareAddr) == 6 &&
				n.State&(unix.NUD_FAILED|unix.NUD_INCOMPLETE) == 0 {
				return n.HardwareAddr
			}
		}
		return nil
	}
	return lookup, h.Close, nil
}

// canRawICMPv6 reports whether a raw ICMPv6 socket can be opened in the
// server's namespace: EPERM/EACCES mean the capability is missing.
func (s *Server) canRawICMPv6() error {
	return nsexec.Do(s.netns, func() error {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("%w: %w", errNoRawSocket, err)
		}
		if err != nil {
			return err
		}
		return unix.Close(fd)
	})
}
