package kernel

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtnet/virtnet/netdriver"

	"github.com/google/nftables"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// Netlink is the real [netdriver.Driver], bound to one network namespace.
type Netlink struct {
	nsPath string
	ns     netns.NsHandle
	h      *netlink.Handle
	// thr is a thread inside the namespace for what works from inside
	// only: /dev/net/tun, /proc/sys/net, the ethtool ioctl.
	thr *nsexec.Thread
	// ethfd is a datagram socket of the namespace for ethtool ioctls,
	// made on the first one; used on thr only.
	ethfd int
	// requests counts the kernel round trips (netlink requests, ioctls,
	// sysctl files, nftables batches) made through this driver.
	requests atomic.Int64
	// natKernel is the time spent in the sendmsg of NAT batches.
	natKernel atomic.Int64

	// mu guards index: the ifindex of each link name this driver has
	// looked up, so that the calls that only need the index (set up,
	// set master, addresses, routes, …) skip a lookup round trip. Renames
	// and deletions through the driver keep it current; a link that
	// vanished behind the driver's back is looked up again (ENODEV). The
	// driver assumes that, while it works, nothing else recreates a link
	// under a name it uses (phase1 owns the namespace during a run).
	mu    sync.Mutex
	index map[string]int

	// nftMu guards nftc, the netfilter socket (see nftConn), and nftnl,
	// its netlink connection (for batches sent without per-message ACKs).
	nftMu sync.Mutex
	nftc  *nftables.Conn
	nftnl *mdnetlink.Conn
	// rtMu guards rtfd, the second rtnetlink socket (-1 until made), and
	// rtseq, its last sequence number, and rtbuf, its receive buffer (see
	// rtRequest).
	rtMu  sync.Mutex
	rtfd  int
	rtseq uint32
	rtbuf []byte
	// nftbMu guards nftb, the builder of NAT batches, made on first use.
	nftbMu sync.Mutex
	nftb   *batchBuilder
}

var _ netdriver.Driver = (*Netlink)(nil)

// Open returns a driver for the network namespace at nsPath (a file such as
// /var/run/netns/NAME or /proc/PID/ns/net). Close it when done.
func Open(nsPath string) (*Netlink, error) {
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	thr, err := nsexec.StartFd(int(ns), nsPath)
	if err != nil {
		ns.Close()
		return nil, err
	}
	// The handle's socket is made on the thread, which is in the
	// namespace already (NewHandleAt would switch a thread in and out).
	var h *netlink.Handle
	if err := thr.Do(func() (err error) {
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		return err
	}); err != nil {
		thr.Close()
		ns.Close()
		return nil, fmt.Errorf("netlink handle in %s: %w", nsPath, err)
	}
	return &Netlink{nsPath: nsPath, ns: ns, h: h, thr: thr, ethfd: -1, rtfd: -1, index: map[string]int{}}, nil
}

// OpenDriver is [Open] behind the [netdriver.Driver] interface, with its Close; it
// exists on every OS (elsewhere it returns [netdriver.ErrNotSupported]).
func OpenDriver(nsPath string) (netdriver.Driver, func() error, error) {
	n, err := Open(nsPath)
	if err != nil {
		return nil, nil, err
	}
	return n, n.Close, nil
}

// Close releases the namespace handle and the netlink sockets.
func (n *Netlink) Close() error {
	n.closeNFT()
	n.closeRT()
	n.h.Close()
	_ = n.thr.Do(func() error {
		if n.ethfd >= 0 {
			_ = unix.Close(n.ethfd)
			n.ethfd = -1
		}
		return nil
	})
	n.thr.Close()
	return n.ns.Close()
}

// Requests is the number of kernel round trips made so far.
//
// Requests and [Netlink.NATKernelTime] are measurements, kept exported for
// bench/cmd/phase1bench: the benchmark a user runs (./bench.sh,
// docs/benchmarks.md) to reproduce the published figures counts round
// trips and the kernel's share of ApplyNAT with them, and neither can be
// measured from outside the driver.
func (n *Netlink) Requests() int64 { return n.requests.Load() }

func (n *Netlink) count(k int64) { n.requests.Add(k) }

// NATKernelTime is the time spent so far inside the sendmsg calls of
// [Netlink.ApplyNAT]'s batches: the kernel processes and commits a batch
// within that call, so this is the kernel's own cost of the rule sets,
// against which ApplyNAT's whole time is measured (bench/).
func (n *Netlink) NATKernelTime() time.Duration { return time.Duration(n.natKernel.Load()) }

// dumpRetries bounds the retries of a dump the kernel interrupted
// (NLM_F_DUMP_INTR) because the table changed meanwhile.
const dumpRetries = 5

func retryDump[T any](f func() (T, error)) (T, error) {
	var v T
	var err error
	for range dumpRetries {
		v, err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return v, err
		}
	}
	return v, err
}

func (n *Netlink) link(name string) (netlink.Link, error) {
	n.count(1)
	l, err := n.h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			n.forget(name)
			return nil, &netdriver.LinkNotFoundError{Name: name}
		}
		return nil, fmt.Errorf("link %q: %w", name, err)
	}
	n.mu.Lock()
	n.index[name] = l.Attrs().Index
	n.mu.Unlock()
	return l, nil
}

// ref returns a link good for the calls that use only its index: from the
// index cache when the name is known, else looked up. cached says which.
func (n *Netlink) ref(name string) (l netlink.Link, cached bool, err error) {
	n.mu.Lock()
	idx, ok := n.index[name]
	n.mu.Unlock()
	if ok {
		return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: idx, Name: name}}, true, nil
	}
	l, err = n.link(name)
	return l, false, err
}

// withRef runs f on the link's reference, looking the name up again once
// if a cached index turns out stale (ENODEV: the link went away behind
// the driver's back, maybe to come back under a new index).
func (n *Netlink) withRef(name string, f func(netlink.Link) error) error {
	l, cached, err := n.ref(name)
	if err != nil {
		return err
	}
	n.count(1)
	err = f(l)
	if cached && errors.Is(err, unix.ENODEV) {
		n.forget(name)
		if l, err = n.link(name); err != nil {
			return err
		}
		n.count(1)
		err = f(l)
	}
	return err
}

func (n *Netlink) forget(name string) {
	n.mu.Lock()
	delete(n.index, name)
	n.mu.Unlock()
}

func (n *Netlink) convert(l netlink.Link, masters map[int]string) (*netdriver.Link, error) {
	a := l.Attrs()
	out := &netdriver.Link{
		Name:     a.Name,
		Index:    a.Index,
		Type:     l.Type(), // vishvananda names the kinds as netdriver does ("device": none)
		MAC:      append(net.HardwareAddr(nil), a.HardwareAddr...),
		MTU:      a.MTU,
		Up:       a.Flags&net.FlagUp != 0,
		NoARP:    a.RawFlags&unix.IFF_NOARP != 0,
		TapOwner: -1,
		TapGroup: -1,
		AltNames: append([]string(nil), a.AltNames...),
	}
	if a.MasterIndex != 0 {
		if name, ok := masters[a.MasterIndex]; ok {
			out.Master = name
		} else {
			n.count(1)
			m, err := n.h.LinkByIndex(a.MasterIndex)
			if err != nil {
				return nil, fmt.Errorf("master of link %q: %w", a.Name, err)
			}
			out.Master = m.Attrs().Name
		}
	}
	switch t := l.(type) {
	case *netlink.Tuntap:
		out.TapOwner, out.TapGroup = int(t.Owner), int(t.Group)
		out.TapMultiQueue = t.Flags&netlink.TUNTAP_MULTI_QUEUE != 0
	case *netlink.Macvtap:
		out.MacvtapMode = cmp.Or(macvlanModes[t.Mode], "default")
	}
	return out, nil
}

// macvlanModes are the names `ip -d link` gives the macvlan modes; any
// other mode is "default".
var macvlanModes = map[netlink.MacvlanMode]string{
	netlink.MACVLAN_MODE_PRIVATE:  "private",
	netlink.MACVLAN_MODE_VEPA:     "vepa",
	netlink.MACVLAN_MODE_BRIDGE:   "bridge",
	netlink.MACVLAN_MODE_PASSTHRU: "passthru",
	netlink.MACVLAN_MODE_SOURCE:   "source",
}

// LinkByName implements [netdriver.Driver].
func (n *Netlink) LinkByName(name string) (*netdriver.Link, error) {
	l, err := n.link(name)
	if err != nil {
		return nil, err
	}
	return n.convert(l, nil)
}

// LinkList implements [netdriver.Driver].
func (n *Netlink) LinkList() ([]*netdriver.Link, error) {
	n.count(1)
	ls, err := retryDump(n.h.LinkList)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	masters := make(map[int]string, len(ls))
	for _, l := range ls {
		masters[l.Attrs().Index] = l.Attrs().Name
	}
	out := make([]*netdriver.Link, 0, len(ls))
	for _, l := range ls {
		c, err := n.convert(l, masters)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// AddBridge implements [netdriver.Driver].
func (n *Netlink) AddBridge(name string, mtu int, mac net.HardwareAddr) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.HardwareAddr = name, mtu, mac
	return n.addLink(&netlink.Bridge{LinkAttrs: attrs})
}

// AddDummy implements [netdriver.Driver].
func (n *Netlink) AddDummy(name string) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	return n.addLink(&netlink.Dummy{LinkAttrs: attrs})
}

func (n *Netlink) addLink(l netlink.Link) error {
	n.count(1)
	if err := n.h.LinkAdd(l); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			// The kernel knows no such link kind: its module is not
			// loaded and could not be (a container cannot modprobe).
			return fmt.Errorf("add %s %q: this kernel has no %s link type (load its module on the node: modprobe %s): %w",
				l.Type(), l.Attrs().Name, l.Type(), l.Type(), err)
		}
		return fmt.Errorf("add %s %q: %w", l.Type(), l.Attrs().Name, err)
	}
	return nil
}

// AddTap implements [netdriver.Driver]. The tap is persistent and owned by
// tap.Owner/tap.Group so that the unprivileged QEMU can open it.
func (n *Netlink) AddTap(tap netdriver.Tap) error {
	n.count(4) // the four ioctls
	if err := n.thr.Do(func() error { return addTap(tap) }); err != nil {
		return fmt.Errorf("add tap %q: %w", tap.Name, err)
	}
	if tap.MTU > 0 {
		return n.SetMTU(tap.Name, tap.MTU)
	}
	return nil
}

// addTap creates a persistent tap in the calling thread's namespace, as
// `ip tuntap add` does: /dev/net/tun opened, the device attached by
// TUNSETIFF, its owner and group set, made persistent, the file closed
// (the device stays). A failure before TUNSETPERSIST leaves nothing: the
// device goes away with the file.
func addTap(tap netdriver.Tap) error {
	flags := uint16(unix.IFF_TAP | unix.IFF_VNET_HDR | unix.IFF_NO_PI)
	if tap.MultiQueue {
		// One queue is opened to create the device; QEMU attaches the
		// others. The flag must match what QEMU asks for.
		flags |= unix.IFF_MULTI_QUEUE
	} else {
		flags |= unix.IFF_TUN_EXCL | unix.IFF_ONE_QUEUE
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/net/tun: %w", err)
	}
	defer unix.Close(fd)
	req, err := unix.NewIfreq(tap.Name)
	if err != nil {
		return err
	}
	req.SetUint16(flags)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, req); err != nil {
		return fmt.Errorf("TUNSETIFF: %w", err)
	}
	for _, c := range []struct {
		name string
		req  uint
		arg  int
	}{
		{"TUNSETOWNER", unix.TUNSETOWNER, int(uint32(tap.Owner))},
		{"TUNSETGROUP", unix.TUNSETGROUP, int(uint32(tap.Group))},
		{"TUNSETPERSIST", unix.TUNSETPERSIST, 1},
	} {
		if err := unix.IoctlSetInt(fd, c.req, c.arg); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return nil
}

// DeleteLink implements [netdriver.Driver].
func (n *Netlink) DeleteLink(name string) error {
	l, err := n.link(name)
	if netdriver.IsLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	n.count(1)
	n.forget(name)
	if err := n.h.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("delete link %q: %w", name, err)
	}
	return nil
}

func (n *Netlink) set(name, what string, f func(netlink.Link) error) error {
	if err := n.withRef(name, f); err != nil {
		if netdriver.IsLinkNotFound(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		return fmt.Errorf("%s of %q: %w", what, name, err)
	}
	return nil
}

// SetName implements [netdriver.Driver].
func (n *Netlink) SetName(old, new string) error {
	var idx int
	err := n.set(old, "rename to "+new, func(l netlink.Link) error {
		idx = l.Attrs().Index
		return n.h.LinkSetName(l, new)
	})
	if err == nil {
		n.mu.Lock()
		delete(n.index, old)
		n.index[new] = idx
		n.mu.Unlock()
	}
	return err
}

// SetUp implements [netdriver.Driver].
func (n *Netlink) SetUp(name string) error {
	return n.set(name, "set up", n.h.LinkSetUp)
}

// SetDown implements [netdriver.Driver].
func (n *Netlink) SetDown(name string) error {
	return n.set(name, "set down", n.h.LinkSetDown)
}

// SetMAC implements [netdriver.Driver].
func (n *Netlink) SetMAC(name string, mac net.HardwareAddr) error {
	return n.set(name, "set MAC "+mac.String(), func(l netlink.Link) error { return n.h.LinkSetHardwareAddr(l, mac) })
}

// SetMTU implements [netdriver.Driver].
func (n *Netlink) SetMTU(name string, mtu int) error {
	return n.set(name, fmt.Sprintf("set MTU %d", mtu), func(l netlink.Link) error { return n.h.LinkSetMTU(l, mtu) })
}

// SetMaster implements [netdriver.Driver].
func (n *Netlink) SetMaster(name, bridge string) error {
	if bridge == "" {
		return n.set(name, "set nomaster", n.h.LinkSetNoMaster)
	}
	b, _, err := n.ref(bridge)
	if err != nil {
		return fmt.Errorf("set master of %q: %w", name, err)
	}
	return n.set(name, "set master "+bridge, func(l netlink.Link) error { return n.h.LinkSetMasterByIndex(l, b.Attrs().Index) })
}

// Learning implements [netdriver.Driver].
func (n *Netlink) Learning(name string) (bool, error) {
	var on bool
	err := n.set(name, "bridge port flags", func(l netlink.Link) (err error) {
		on, err = n.portLearning(l.Attrs().Index)
		return err
	})
	return on, err
}

// SetLearning implements [netdriver.Driver].
func (n *Netlink) SetLearning(name string, on bool) error {
	return n.set(name, fmt.Sprintf("set learning %v", on), func(l netlink.Link) error { return n.h.LinkSetLearning(l, on) })
}

// AddAltName implements [netdriver.Driver].
func (n *Netlink) AddAltName(name, alt string) error {
	if len(alt) > netdriver.MaxAltName {
		return fmt.Errorf("add altname to %q: %d bytes, at most %d", name, len(alt), netdriver.MaxAltName)
	}
	return n.set(name, fmt.Sprintf("add altname %q", alt), func(l netlink.Link) error { return n.h.LinkAddAltName(l, alt) })
}

func nlFamily(f netdriver.Family) int {
	if f == netdriver.IPv6 {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}

func prefixOf(ipn *net.IPNet) (netip.Prefix, bool) {
	if ipn == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(ipn.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := ipn.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

func ipNet(p netip.Prefix) *net.IPNet {
	bits := p.Addr().BitLen()
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), bits)}
}

// AddrList implements [netdriver.Driver]: addresses of universe (global) scope.
func (n *Netlink) AddrList(name string, family netdriver.Family) ([]netip.Prefix, error) {
	fas, err := n.AddrListFlags(name, family)
	var out []netip.Prefix
	for _, a := range fas {
		out = append(out, a.Prefix)
	}
	return out, err
}

// AddrOwners implements [netdriver.Driver].
func (n *Netlink) AddrOwners(addr netip.Addr) ([]string, error) {
	fam := netdriver.IPv4
	if addr.Is6() {
		fam = netdriver.IPv6
	}
	n.count(1)
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return n.h.AddrList(nil, nlFamily(fam)) })
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	var out []string
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok && p.Addr() == addr {
			n.count(1)
			l, err := n.h.LinkByIndex(a.LinkIndex)
			if err != nil {
				return nil, fmt.Errorf("link of address %s: %w", addr, err)
			}
			out = append(out, l.Attrs().Name)
		}
	}
	return out, nil
}

// AddrReplace implements [netdriver.Driver]. IPv6 addresses skip duplicate address
// detection so that they are usable at once.
func (n *Netlink) AddrReplace(name string, addr netip.Prefix) error {
	a := netdriver.FlaggedAddr{Prefix: addr}
	if addr.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	return n.AddrReplaceFlags(name, a)
}

// AddrDel implements [netdriver.Driver].
func (n *Netlink) AddrDel(name string, addr netip.Prefix) error {
	err := n.set(name, "delete address "+addr.String(), func(l netlink.Link) error {
		return n.h.AddrDel(l, &netlink.Addr{IPNet: ipNet(addr)})
	})
	if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// RouteList implements [netdriver.Driver]: the link's routes in the main table,
// without IPv6 link-local and multicast routes.
func (n *Netlink) RouteList(name string, family netdriver.Family) ([]netdriver.Route, error) {
	l, _, err := n.ref(name)
	if err != nil {
		return nil, err
	}
	n.count(1)
	filter := &netlink.Route{LinkIndex: l.Attrs().Index, Table: unix.RT_TABLE_MAIN}
	rs, err := retryDump(func() ([]netlink.Route, error) {
		return n.h.RouteListFiltered(nlFamily(family), filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, fmt.Errorf("list routes of %q: %w", name, err)
	}
	var out []netdriver.Route
	for _, r := range rs {
		// vishvananda/netlink gives a default route its Dst (0.0.0.0/0,
		// ::/0) as iproute2 does, so every route of the family has one.
		dst, ok := prefixOf(r.Dst)
		if !ok || dst.Addr().IsLinkLocalUnicast() && dst.Addr().Is6() || dst.Addr().IsMulticast() {
			continue
		}
		rt := netdriver.Route{Dst: dst, Link: name, Priority: r.Priority, Kernel: r.Protocol == unix.RTPROT_KERNEL}
		if a, ok := netip.AddrFromSlice(r.Gw); ok {
			rt.Gateway = a.Unmap()
		}
		if a, ok := netip.AddrFromSlice(r.Src); ok {
			rt.Src = a.Unmap()
		}
		out = append(out, rt)
	}
	return out, nil
}

// RouteReplace implements [netdriver.Driver].
func (n *Netlink) RouteReplace(r netdriver.Route) error {
	return n.set(r.Link, "replace route "+r.Dst.String(), func(l netlink.Link) error {
		nr := nlRoute(l, r)
		if !r.Gateway.IsValid() {
			nr.Scope = netlink.SCOPE_LINK
		}
		if r.Src.IsValid() {
			nr.Src = r.Src.AsSlice()
		}
		return n.h.RouteReplace(nr)
	})
}

// nlRoute is r's destination, gateway and metric on link l.
func nlRoute(l netlink.Link, r netdriver.Route) *netlink.Route {
	nr := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(r.Dst), Priority: r.Priority}
	if r.Gateway.IsValid() {
		nr.Gw = r.Gateway.AsSlice()
	}
	return nr
}

// Sysctl implements [netdriver.Driver].
func (n *Netlink) Sysctl(key string) (string, error) {
	p, err := netdriver.SysctlPath(key)
	if err != nil {
		return "", err
	}
	var v []byte
	n.count(1)
	err = n.thr.Do(func() (err error) {
		v, err = os.ReadFile(p)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(v)), nil
}

// SetSysctl implements [netdriver.Driver].
func (n *Netlink) SetSysctl(key, value string) error {
	p, err := netdriver.SysctlPath(key)
	if err != nil {
		return err
	}
	n.count(1)
	if err := n.thr.Do(func() error { return os.WriteFile(p, []byte(value), 0o644) }); err != nil {
		return fmt.Errorf("set sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

// TXChecksum implements [netdriver.Driver].
func (n *Netlink) TXChecksum(name string) (bool, error) {
	v, err := n.ethtool(name, ethtoolGTXCSUM, 0)
	return v != 0, err
}

// SetTXChecksum implements [netdriver.Driver].
func (n *Netlink) SetTXChecksum(name string, on bool) error {
	var v uint32
	if on {
		v = 1
	}
	_, err := n.ethtool(name, ethtoolSTXCSUM, v)
	return err
}

// nftSndBuf and nftRcvBuf are the netfilter socket's buffer limits (the
// kernel doubles them; memory is charged only for what is queued). The
// largest batch the masquerade rules make, every TCP and UDP port
// declared, is about 6.5 MB; the default limit (212992 bytes) refused
// batches of 200 ports (EMSGSIZE). The receive side holds one ACK per
// message (1–2 KiB of buffer each): the default overflowed at about 120
// messages (ENOBUFS).
const (
	nftSndBuf = 16 << 20
	nftRcvBuf = 4 << 20
)

// nftConn returns the driver's one netfilter socket, dialed on first use;
// the caller holds nftMu. One socket serves every NAT call of the driver
// because closing a netfilter socket is slow: the kernel's release of a
// netfilter netlink socket (nft_rcv_nl_event) waits for the pending
// destruction of committed transactions, which waits for an RCU grace
// period (synchronize_rcu). Measured here: 5–12 ms per close right after a
// commit that deleted something, against 0.5–1 ms for the commit itself,
// and 0.01 ms after one that only added (hence ApplyNAT's first batch).
func (n *Netlink) nftConn() (*nftables.Conn, error) {
	if n.nftc != nil {
		return n.nftc, nil
	}
	var nl *mdnetlink.Conn
	var c *nftables.Conn
	// Dialed on the namespace's thread: the socket is made in the
	// namespace without switching another thread in and out.
	err := n.thr.Do(func() (err error) {
		c, err = nftables.New(nftables.AsLasting(),
			nftables.WithSockOptions(nftSockOptions, func(c *mdnetlink.Conn) error { nl = c; return nil }))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nftables in %s: %w", n.nsPath, err)
	}
	if nl == nil {
		_ = c.CloseLasting()
		return nil, fmt.Errorf("nftables in %s: no netlink connection", n.nsPath)
	}
	n.nftc, n.nftnl = c, nl
	return c, nil
}

// nftSockOptions sizes the buffers (see nftSndBuf) and asks for the
// kernel's error text with errors. Not for capped ACKs, which would keep an
// error from echoing a request of up to 64 KiB: mdlayher/netlink v1.11.2
// then misreads the error as too short (it looks for the text past the
// whole request), and the receive buffer holds the echo anyway.
func nftSockOptions(c *mdnetlink.Conn) error {
	if err := c.SetOption(mdnetlink.ExtendedAcknowledge, true); err != nil {
		return fmt.Errorf("netlink extended ACKs: %w", err)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var forced error
	if err := raw.Control(func(fd uintptr) {
		forced = errors.Join(
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, nftSndBuf),
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, nftRcvBuf))
	}); err != nil {
		return err
	}
	if forced != nil {
		// Without CAP_NET_ADMIN in the socket's namespace: as much as
		// net.core.wmem_max and rmem_max allow.
		return errors.Join(c.SetWriteBuffer(nftSndBuf), c.SetReadBuffer(nftRcvBuf))
	}
	return nil
}

// nftDo runs fn on the driver's netfilter socket, one call at a time (a
// batch is queued on the connection, so two at once would mix). After an
// error the socket is dropped: ACKs of the failed batch may still be
// queued on it.
func (n *Netlink) nftDo(fn func(*nftables.Conn) error) error {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := n.nftConn()
	if err != nil {
		return err
	}
	n.count(1)
	err = fn(c)
	if err != nil {
		n.dropNFT()
	}
	return err
}

// closeNFT releases the netfilter socket.
func (n *Netlink) closeNFT() {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	n.dropNFT()
}

// dropNFT forgets the netfilter socket and releases it without waiting
// for the kernel (see nftConn): the release runs on its own goroutine.
// The caller holds nftMu.
func (n *Netlink) dropNFT() {
	if c := n.nftc; c != nil {
		n.nftc, n.nftnl = nil, nil
		go func() { _ = c.CloseLasting() }()
	}
}

// ApplyNAT implements [netdriver.Driver]. It sends the batch that only
// adds first (see queueNAT): on a namespace without the table, the usual
// first run, that is all; where the table exists the kernel refuses it
// whole (EEXIST) and the batch that replaces the table follows.
func (n *Netlink) ApplyNAT(nat netdriver.NAT) error {
	err := n.applyNAT(nat, false)
	if errors.Is(err, unix.EEXIST) {
		err = n.applyNAT(nat, true)
	}
	return err
}

func (n *Netlink) applyNAT(nat netdriver.NAT, replace bool) error {
	batch, err := n.natBatch(nat, replace)
	if err != nil {
		return err
	}
	return n.nftDo(func(*nftables.Conn) error {
		took, err := sendBatch(n.nftnl, batch)
		n.natKernel.Add(int64(took))
		if err != nil {
			return fmt.Errorf("netdriver: apply NAT table %s %s: %w", familyName(nat.Family), netdriver.NATTable, err)
		}
		return nil
	})
}

// natBatch builds nat's batch on the driver's builder.
func (n *Netlink) natBatch(nat netdriver.NAT, replace bool) ([]mdnetlink.Message, error) {
	n.nftbMu.Lock()
	defer n.nftbMu.Unlock()
	if n.nftb == nil {
		b, err := newBatchBuilder()
		if err != nil {
			return nil, err
		}
		n.nftb = b
	}
	batch, err := n.nftb.build(nat, replace)
	if err != nil {
		n.nftb = nil
	}
	return batch, err
}

// DeleteNAT implements [netdriver.Driver].
func (n *Netlink) DeleteNAT(family netdriver.Family) error {
	return n.nftDo(func(c *nftables.Conn) error { return deleteNAT(c, family) })
}

// NATRules implements [netdriver.Driver].
func (n *Netlink) NATRules(family netdriver.Family) ([]string, error) {
	var lines []string
	err := n.nftDo(func(c *nftables.Conn) (err error) {
		lines, err = listNAT(c, family)
		return err
	})
	return lines, err
}
