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
// while the kernel resolves an address, when the driver cannot subscribe
// to the kernel's neighbour updates (or the kernel dropped some).
const neighborPoll = 50 * time.Millisecond

// usableNeigh are the neighbour states whose link-layer address is
// known.
const usableNeigh = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// ResolveNeighbor implements [netdriver.NeighborResolver]: it looks in the
// link's neighbour table and, when addr has no usable entry, subscribes
// to the namespace's neighbour updates, looks again, and sends one UDP
// datagram to addr's discard port (9) out of the link, which makes the
// kernel resolve it; the kernel's update for addr ends the wait (a look
// every 50 ms instead when the subscription fails or ends early), or ctx
// does.
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
	usable := func(ne netlink.Neigh) bool {
		a, ok := netip.AddrFromSlice(ne.IP)
		return ok && a.Unmap() == addr && ne.State&usableNeigh != 0 && len(ne.HardwareAddr) > 0
	}
	look := func() (net.HardwareAddr, error) {
		n.count(1)
		neighs, err := retryDump(func() ([]netlink.Neigh, error) { return n.h.NeighList(idx, fam) })
		if err != nil {
			return nil, fmt.Errorf("neighbours of %q: %w", name, err)
		}
		for _, ne := range neighs {
			if usable(ne) {
				return ne.HardwareAddr, nil
			}
		}
		return nil, nil
	}
	if mac, err := look(); mac != nil || err != nil {
		return mac, err
	}
	// Subscribed before the second look: no update falls between them.
	var updates chan netlink.NeighUpdate
	ch := make(chan netlink.NeighUpdate, 16)
	if stop, err := subscribe(n, ch, func(ch chan<- netlink.NeighUpdate, done <-chan struct{}) error {
		return netlink.NeighSubscribeWithOptions(ch, done, netlink.NeighSubscribeOptions{ErrorCallback: func(error) {}})
	}); err == nil {
		updates = ch
		defer stop()
	}
	if mac, err := look(); mac != nil || err != nil {
		return mac, err
	}
	if err := n.thr.Do(func() error { return kick(name, idx, fam, addr) }); err != nil {
		return nil, fmt.Errorf("resolve %s on %q: %w", addr, name, err)
	}
	var poll *time.Timer
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	for {
		var tick <-chan time.Time
		if updates == nil {
			if poll == nil {
				poll = time.NewTimer(neighborPoll)
			} else {
				poll.Reset(neighborPoll)
			}
			tick = poll.C
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("resolve %s on %q: %w", addr, name, ctx.Err())
		case u, ok := <-updates:
			if ok {
				if u.Type == unix.RTM_NEWNEIGH && u.LinkIndex == idx && usable(u.Neigh) {
					return u.HardwareAddr, nil
				}
				continue
			}
			// Ended early (the kernel dropped updates): look now, then
			// every neighborPoll.
			updates = nil
		case <-tick:
		}
		if mac, err := look(); mac != nil || err != nil {
			return mac, err
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
