package kernel

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/netdriver"
)

var _ netdriver.NeighborResolver = (*Netlink)(nil)

// neighborPoll is the pause between two looks at the neighbour table
// while the kernel resolves an address.
const neighborPoll = 50 * time.Millisecond

// usableNeigh are the neighbour states whose link-layer address is
// known.
const usableNeigh = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// ResolveNeighbor implements [netdriver.NeighborResolver]: it looks in the
// link's neighbour table and, when addr has no usable entry, sends one UDP
// datagram to addr's discard port (9) out of the link, which makes the
// kernel resolve it, then looks again every 50 ms until ctx ends.
func (n *Netlink) ResolveNeighbor(ctx context.Context, name string, addr netip.Addr) (net.HardwareAddr, error) {
	l, _, err := n.ref(name)
	if err != nil {
		return nil, err
	}
	idx := l.Attrs().Index
	fam := unix.AF_INET
	if addr.Is6() {
		fam = unix.AF_INET6
	}
	kicked := false
	for {
		n.count(1)
		neighs, err := retryDump(func() ([]netlink.Neigh, error) { return n.h.NeighList(idx, fam) })
		if err != nil {
			return nil, fmt.Errorf("neighbours of %q: %w", name, err)
		}
		for _, ne := range neighs {
			if a, ok := netip.AddrFromSlice(ne.IP); ok && a.Unmap() == addr && ne.State&usableNeigh != 0 && len(ne.HardwareAddr) > 0 {
				return ne.HardwareAddr, nil
			}
		}
		if !kicked {
			if err := n.thr.Do(func() error { return kick(name, idx, fam, addr) }); err != nil {
				return nil, fmt.Errorf("resolve %s on %q: %w", addr, name, err)
			}
			kicked = true
		}
		t := time.NewTimer(neighborPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("resolve %s on %q: %w", addr, name, ctx.Err())
		case <-t.C:
		}
	}
}

// kick sends one empty UDP datagram to addr (of family fam) at its
// discard port out of the link; it runs inside the namespace.
func kick(name string, idx, fam int, addr netip.Addr) error {
	var sa unix.Sockaddr
	if addr.Is6() {
		sa = &unix.SockaddrInet6{Port: 9, Addr: addr.As16(), ZoneId: uint32(idx)}
	} else {
		sa = &unix.SockaddrInet4{Port: 9, Addr: addr.As4()}
	}
	fd, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.BindToDevice(fd, name); err != nil {
		return err
	}
	// The datagram only has to start resolution: a send error (the
	// neighbour failed before) leaves the caller polling until ctx ends.
	_ = unix.Sendto(fd, nil, unix.MSG_DONTWAIT, sa)
	return nil
}
