package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// The server reads the kernel's state (addresses, neighbours) over
// rtnetlink with jsimonetti/rtnetlink, read-only, and not with
// vishvananda/netlink, the module's client elsewhere. Two reasons: phase2
// and the launcher link none of the kernel-changing code
// (phase2.TestNoKernelCodeLinked fails on vishvananda/netlink), and the
// server waits on
// an address subscription, and vishvananda/netlink v1.3.1's
// AddrSubscribeWithOptions ends the subscription at the first receive
// error (ENOBUFS when a burst of updates overflows the socket, which the
// server must survive: see waitLinkLocal) and reports the error as text,
// so that ENOBUFS cannot even be told apart; it also stops only when a
// message or a timeout comes, not when ctx ends.

// dial opens an rtnetlink socket in the server's namespace ("" is the
// current one), joined to the multicast groups.
// The socket is made inside the namespace ([nsexec.Do], the module's one
// way in) and stays bound to it.
func (s *Server) dial(groups uint32) (*rtnetlink.Conn, error) {
	var c *rtnetlink.Conn
	err := nsexec.Do(s.netns, func() (err error) {
		c, err = rtnetlink.Dial(&netlink.Config{Groups: groups})
		if err != nil {
			return fmt.Errorf("rtnetlink: %w", err)
		}
		return nil
	})
	return c, err
}

// usableLinkLocal returns the address of m when it is a link-local IPv6
// address of link index that finished duplicate address detection.
func usableLinkLocal(m *rtnetlink.AddressMessage, index int) (netip.Addr, bool) {
	if m == nil || m.Attributes == nil || m.Family != unix.AF_INET6 || int(m.Index) != index {
		return netip.Addr{}, false
	}
	ip := m.Attributes.Local
	if ip == nil {
		ip = m.Attributes.Address
	}
	a, ok := netip.AddrFromSlice(ip)
	flags := uint32(m.Flags) | m.Attributes.Flags
	if !ok || !a.Is6() || !a.IsLinkLocalUnicast() || flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) != 0 {
		return netip.Addr{}, false
	}
	return a, true
}

// waitLinkLocal returns a link-local address of link index that finished
// duplicate address detection, waiting for one on an rtnetlink address
// subscription (the kernel adds it when the bridge gets a carrier). It
// returns ctx's error when ctx ends first.
func (s *Server) waitLinkLocal(ctx context.Context, index int) (netip.Addr, error) {
	// Subscribe first, then list: an address that comes up in between is
	// in the subscription.
	sub, err := s.dial(unix.RTMGRP_IPV6_IFADDR)
	if err != nil {
		return netip.Addr{}, err
	}
	defer sub.Close()
	stop := context.AfterFunc(ctx, func() { _ = sub.SetReadDeadline(time.Now()) })
	defer stop()
	list, err := s.dial(0)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := list.Address.List()
	list.Close()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list addresses: %w", err)
	}
	for i := range addrs {
		if a, ok := usableLinkLocal(&addrs[i], index); ok {
			return a, nil
		}
	}
	for {
		msgs, raw, err := sub.Receive()
		if ctx.Err() != nil {
			return netip.Addr{}, ctx.Err()
		}
		if err != nil {
			var nerr *netlink.OpError
			if errors.As(err, &nerr) && errors.Is(nerr.Err, unix.ENOBUFS) {
				// Updates were lost: the next ones still come, and the
				// address the kernel reports again once it is usable.
				continue
			}
			return netip.Addr{}, fmt.Errorf("address subscription: %w", err)
		}
		for i, m := range msgs {
			// A deletion (RTM_DELADDR) carries the address too.
			if am, ok := m.(*rtnetlink.AddressMessage); ok && raw[i].Header.Type == unix.RTM_NEWADDR {
				if a, ok := usableLinkLocal(am, index); ok {
					return a, nil
				}
			}
		}
	}
}

// neighbors returns a lookup of the MAC the namespace's neighbour table
// holds for an IPv6 address on link index, and a function closing it.
func (s *Server) neighbors(index int) (func(netip.Addr) net.HardwareAddr, func(), error) {
	c, err := s.dial(0)
	if err != nil {
		return nil, nil, err
	}
	lookup := func(ip netip.Addr) net.HardwareAddr {
		ns, err := dumpNeighbors(c, unix.AF_INET6)
		if err != nil {
			return nil
		}
		for _, n := range ns {
			if int(n.Index) != index || n.State&(unix.NUD_FAILED|unix.NUD_INCOMPLETE) != 0 {
				continue
			}
			if a, ok := netip.AddrFromSlice(n.Attributes.Address); ok && a == ip.WithZone("") && len(n.Attributes.LLAddress) == 6 {
				return n.Attributes.LLAddress
			}
		}
		return nil
	}
	return lookup, func() { c.Close() }, nil
}

// dumpNeighbors lists the neighbour entries of family (AF_INET6, or
// AF_BRIDGE for a bridge's forwarding database) that have attributes. The
// kernel dumps that family only (Neigh.List asks for every family).
func dumpNeighbors(c *rtnetlink.Conn, family uint16) ([]*rtnetlink.NeighMessage, error) {
	msgs, err := c.Execute(&rtnetlink.NeighMessage{Family: family}, unix.RTM_GETNEIGH, netlink.Request|netlink.Dump)
	if err != nil {
		return nil, err
	}
	var out []*rtnetlink.NeighMessage
	for _, m := range msgs {
		if n, ok := m.(*rtnetlink.NeighMessage); ok && n.Attributes != nil {
			out = append(out, n)
		}
	}
	return out, nil
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
