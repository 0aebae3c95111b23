package kernelops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
)

// DiscoverPodLink reads a pod link: type, MAC, MTU, global addresses
// (IPv4 first) and its routes in the main table. It refuses a link of one
// of the types phase1 itself creates (a dummy in the pod link's place
// means phase1 ran before and its cache is gone), and, with a
// [*binding.PodLinkError] matching [binding.ErrPrepared], a pod link phase1 already
// prepared (marked, a port of a k6t- or marked bridge, or with phase1's
// bridge or tap, or a link under one of the names in others, next to it),
// so that a lost cache never makes phase1 record its own changes as the
// CNI's.
func DiscoverPodLink(d netdriver.Driver, in binding.Input, others ...string) (*cache.Link, error) {
	l, err := d.LinkByName(in.Names.Pod)
	if netdriver.IsLinkNotFound(err) {
		return nil, &binding.PodLinkError{Name: in.Names.Pod, Reason: "not found in the pod namespace", Err: err}
	}
	if err != nil {
		return nil, err
	}
	if err := checkNotPrepared(d, in, l, others...); err != nil {
		return nil, err
	}
	return discover(d, l)
}

func discover(d netdriver.Driver, l *netdriver.Link) (*cache.Link, error) {
	name := l.Name
	if l.Type == netdriver.TypeDummy || l.Type == netdriver.TypeBridge || l.Type == netdriver.TypeTuntap {
		return nil, &binding.PodLinkError{Name: name, Reason: fmt.Sprintf("is a %s, not a pod link as the CNI leaves it (was phase1 run before, and its cache removed?)", l.Type), Err: binding.ErrPrepared}
	}
	// A link-layer address that is not a 48-bit MAC (IPoIB) is recorded
	// as none: phase1 neither uses nor restores it.
	mac, _ := cache.MACFrom(l.MAC)
	out := &cache.Link{Name: l.Name, Type: l.Type, MAC: mac, MTU: l.MTU}
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		addrs, err := d.AddrListFlags(name, fam)
		if err != nil {
			return nil, &binding.PodLinkError{Name: name, Reason: "list addresses", Err: err}
		}
		for _, a := range addrs {
			out.Addresses = append(out.Addresses, a.Prefix)
			if f := a.Flags & netdriver.SettableAddrFlags; f != 0 {
				if out.AddressFlags == nil {
					out.AddressFlags = map[netip.Prefix]uint32{}
				}
				out.AddressFlags[a.Prefix] = f
			}
		}
		routes, err := d.RouteList(name, fam)
		if err != nil {
			return nil, &binding.PodLinkError{Name: name, Reason: "list routes", Err: err}
		}
		for _, r := range routes {
			out.Routes = append(out.Routes, CacheRoute(r))
		}
	}
	return out, nil
}

// CacheRoute converts a kernel route to its cache form.
func CacheRoute(r netdriver.Route) cache.Route {
	return cache.Route{Dst: r.Dst, Gateway: r.Gateway, Src: r.Src, Metric: r.Priority, Kernel: r.Kernel}
}

// KernelRoute converts a cached route back, for link.
func KernelRoute(c cache.Route, link string) netdriver.Route {
	return netdriver.Route{Dst: c.Dst, Gateway: c.Gateway, Src: c.Src, Link: link, Priority: c.Metric, Kernel: c.Kernel}
}

// Addresses splits a link's cached addresses by family.
func Addresses(l *cache.Link) (v4, v6 []netip.Prefix) {
	for _, p := range l.Addresses {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	return v4, v6
}

// Lookup returns a link, or nil when it does not exist.
func Lookup(d netdriver.Driver, name string) (*netdriver.Link, error) {
	l, err := d.LinkByName(name)
	if netdriver.IsLinkNotFound(err) {
		return nil, nil
	}
	return l, err
}

// EnsureBridge makes phase1's bridge named name with the given MTU and
// MAC (nil: keep what it has), marked ([Mark]), and returns it; a link
// under that name that is not phase1's for this interface is a
// [*binding.ForeignLinkError].
func EnsureBridge(d netdriver.Driver, in binding.Input, name string, mtu int, mac net.HardwareAddr) (*netdriver.Link, error) {
	l, err := ensure(d, in, name, netdriver.TypeBridge, func() error { return d.AddBridge(name, mtu, mac) })
	if err != nil {
		return nil, err
	}
	if mtu > 0 && l.MTU != mtu {
		if err := d.SetMTU(name, mtu); err != nil {
			return nil, err
		}
	}
	if mac != nil && l.MAC.String() != mac.String() {
		if err := d.SetMAC(name, mac); err != nil {
			return nil, err
		}
		l.MAC = mac
	}
	return l, nil
}

// EnsureTap makes the VM's tap, marked ([Mark]), enslaved to bridge and
// up; a link under that name that is not phase1's for this interface, or
// a tap owned by someone else, is a [*binding.ForeignLinkError].
func EnsureTap(d netdriver.Driver, in binding.Input, tap netdriver.Tap, bridge string) error {
	l, err := ensure(d, in, tap.Name, netdriver.TypeTuntap, func() error { return d.AddTap(tap) })
	if err != nil {
		return err
	}
	if l.TapOwner >= 0 && l.TapOwner != tap.Owner || l.TapGroup >= 0 && l.TapGroup != tap.Group {
		return &binding.ForeignLinkError{Name: tap.Name, Reason: fmt.Sprintf("tap owned by %d:%d, want %d:%d", l.TapOwner, l.TapGroup, tap.Owner, tap.Group)}
	}
	if l.TapMultiQueue != tap.MultiQueue {
		return &binding.ForeignLinkError{Name: tap.Name, Reason: fmt.Sprintf("tap multi_queue=%v, want %v", l.TapMultiQueue, tap.MultiQueue)}
	}
	if tap.MTU > 0 && l.MTU != tap.MTU {
		if err := d.SetMTU(tap.Name, tap.MTU); err != nil {
			return err
		}
	}
	if l.Master != bridge {
		if err := d.SetMaster(tap.Name, bridge); err != nil {
			return err
		}
	}
	if !l.Up {
		return d.SetUp(tap.Name)
	}
	return nil
}

// EnsureTXChecksumOff turns TX checksum offload off on a link (KubeVirt
// does so on its bridges: checksums of packets the VM sends through the
// tap are otherwise left to hardware that never sees them).
func EnsureTXChecksumOff(d netdriver.Driver, name string) error {
	on, err := d.TXChecksum(name)
	if err != nil {
		return err
	}
	if on {
		return d.SetTXChecksum(name, false)
	}
	return nil
}

// dadWait bounds the wait for the restored addresses' duplicate address
// detection (one probe, 1 s by default, once the link has carrier).
const dadWait = 10 * time.Second

// RestoreLink gives a pod link back what was discovered: MAC, MTU, no
// master, addresses, up, and the routes the kernel does not derive itself.
//
// The restore is exact: each address gets back its own flags (an IPv6 address the CNI
// added without nodad goes through duplicate address detection again,
// which is waited for, bounded by ctx and 10 s, before routes whose source
// it is are added), and a prefix route the kernel adds with an address
// but the discovery did not have (ptp deletes them) is deleted again.
//
// A pod link that is gone is not an error: there is nothing to give back
// (Multus removes the pod link of an interface KubeVirt 1.x hot-unplugs,
// state: absent, before phase1 removes what it made for it).
func RestoreLink(ctx context.Context, d netdriver.Driver, link *cache.Link) error {
	l, err := d.LinkByName(link.Name)
	if errors.Is(err, netdriver.ErrLinkNotFound) {
		return nil
	}
	if err != nil {
		return &binding.PodLinkError{Name: link.Name, Reason: "cannot restore", Err: err}
	}
	if l.Master != "" {
		if err := d.SetMaster(link.Name, ""); err != nil {
			return err
		}
	}
	if link.MAC.IsValid() && l.MAC.String() != link.MAC.String() {
		if err := d.SetMAC(link.Name, link.MAC.HardwareAddr()); err != nil {
			return err
		}
	}
	if link.MTU > 0 && l.MTU != link.MTU {
		if err := d.SetMTU(link.Name, link.MTU); err != nil {
			return err
		}
	}
	v4, v6 := Addresses(link)
	for _, a := range append(v4, v6...) {
		if err := d.AddrReplaceFlags(link.Name, netdriver.FlaggedAddr{Prefix: a, Flags: link.AddressFlags[a]}); err != nil {
			return err
		}
	}
	if !l.Up {
		if err := d.SetUp(link.Name); err != nil {
			return err
		}
	}
	if err := waitDAD(ctx, d, link.Name); err != nil {
		return err
	}
	if err := dropPrefixRoutes(d, link, append(v4, v6...)); err != nil {
		return err
	}
	// Routes without gateway first: a gateway must be reachable.
	for _, pass := range []bool{false, true} {
		for _, c := range link.Routes {
			if c.Kernel || c.Gateway.IsValid() != pass {
				continue
			}
			if err := d.RouteReplace(KernelRoute(c, link.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// dadPoll is the pause between two looks at the link's addresses while
// duplicate address detection runs, when the driver cannot watch them
// ([netdriver.AddrWatcher]) or the watch ended early.
const dadPoll = 50 * time.Millisecond

// waitDAD waits until no global IPv6 address of the link is tentative;
// one whose duplicate address detection failed is an error. With a
// driver that watches addresses, each change the kernel reports (the end
// of detection changes the address's flags) makes it look again;
// otherwise it looks every dadPoll.
func waitDAD(ctx context.Context, d netdriver.Driver, name string) error {
	ctx, cancel := context.WithTimeout(ctx, dadWait)
	defer cancel()
	var changes <-chan struct{}
	watching := false
	poll := time.NewTimer(dadPoll)
	defer poll.Stop()
	for {
		addrs, err := d.AddrListFlags(name, netdriver.IPv6)
		if err != nil {
			return err
		}
		pending := ""
		for _, a := range addrs {
			if a.Flags&netdriver.AddrFlagDADFailed != 0 {
				return &binding.PodLinkError{Name: name, Reason: fmt.Sprintf("restored address %s failed duplicate address detection", a.Prefix)}
			}
			if a.Flags&netdriver.AddrFlagTentative != 0 {
				pending = a.Prefix.String()
			}
		}
		if pending == "" {
			return nil
		}
		if w, ok := d.(netdriver.AddrWatcher); ok && !watching {
			// Watching from now on, and looking once more: no change
			// falls between the look above and the watch.
			watching = true
			if c, stop, err := w.WatchAddrs(name); err == nil {
				defer stop()
				changes = c
				continue
			}
		}
		var tick <-chan time.Time
		if changes == nil {
			poll.Reset(dadPoll)
			tick = poll.C
		}
		select {
		case <-ctx.Done():
			return &binding.PodLinkError{Name: name, Reason: "restored address " + pending + " still tentative (duplicate address detection)", Err: ctx.Err()}
		case _, ok := <-changes:
			if !ok {
				changes = nil // the watch ended early: poll
			}
		case <-tick:
		}
	}
}

// dropPrefixRoutes deletes the routes the kernel added for the restored
// addresses (proto kernel, to an address's prefix) that the discovery
// did not have.
func dropPrefixRoutes(d netdriver.Driver, link *cache.Link, addrs []netip.Prefix) error {
	had := map[string]bool{}
	for _, r := range link.Routes {
		if r.Kernel {
			had[fmt.Sprintf("%s/%d", r.Dst, r.Metric)] = true
		}
	}
	prefixes := map[netip.Prefix]bool{}
	for _, a := range addrs {
		prefixes[a.Masked()] = true
	}
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		routes, err := d.RouteList(link.Name, fam)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if !r.Kernel || r.Gateway.IsValid() || !prefixes[r.Dst] || had[fmt.Sprintf("%s/%d", r.Dst, r.Priority)] {
				continue
			}
			if err := d.RouteDel(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckAddressFree checks, before Prepare changes anything, that addr is
// held by no link other than those in allowed; want names the link phase1
// will give it to, for the error.
func CheckAddressFree(d netdriver.Driver, addr netip.Addr, want string, allowed ...string) error {
	owners, err := d.AddrOwners(addr)
	if err != nil {
		return err
	}
	for _, o := range owners {
		if !slices.Contains(allowed, o) {
			return &binding.AddressInUseError{Addr: addr, Link: o, Want: want}
		}
	}
	return nil
}

// EnsureSysctl is `sysctl -w net.KEY=VALUE`, skipped when the value is
// already set.
func EnsureSysctl(d netdriver.Driver, key, value string) error {
	v, err := d.Sysctl(key)
	if err != nil {
		return err
	}
	if v == value {
		return nil
	}
	return d.SetSysctl(key, value)
}

// EnsureAddr is `ip addr replace PREFIX dev LINK`, skipped when the link
// already holds the address.
func EnsureAddr(d netdriver.Driver, link string, p netip.Prefix) error {
	if has, err := HasAddr(d, link, p); err != nil || has {
		return err
	}
	return d.AddrReplace(link, p)
}

// HasAddr reports whether the link holds p.
func HasAddr(d netdriver.Driver, link string, p netip.Prefix) (bool, error) {
	fam := netdriver.IPv4
	if p.Addr().Is6() {
		fam = netdriver.IPv6
	}
	addrs, err := d.AddrList(link, fam)
	return slices.Contains(addrs, p), err
}

// ownership is what a link found under one of phase1's names is to it.
type ownership int

const (
	ours ownership = iota
	// adoptable: unmarked and as phase1 creates it, in a resumed pair.
	adoptable
	foreign
)

// classify tells whether l, found under a name phase1 uses for a link of
// type typ, is phase1's. The reason explains a foreign link.
func classify(d netdriver.Driver, in binding.Input, l *netdriver.Link, typ string) (ownership, string, error) {
	if l.Type != typ {
		return foreign, fmt.Sprintf("has type %s, want %s", l.Type, typ), nil
	}
	mark := in.Mark(typ)
	switch {
	case slices.Contains(l.AltNames, mark):
		return ours, "", nil
	case slices.ContainsFunc(l.AltNames, isMark):
		return foreign, fmt.Sprintf("phase1 made it for another VMI or interface (altnames %q, want %q)", l.AltNames, mark), nil
	case !in.Resumed:
		return foreign, fmt.Sprintf("not created by phase1 (no altname %q)", mark), nil
	}
	why, err := notAsCreated(d, in, l)
	if err != nil {
		return foreign, "", err
	}
	if why != "" {
		return foreign, fmt.Sprintf("not created by phase1 (no altname %q, and %s)", mark, why), nil
	}
	return adoptable, "", nil
}

// notAsCreated says how l differs from a link phase1 just created ("" when
// it does not).
func notAsCreated(d netdriver.Driver, in binding.Input, l *netdriver.Link) (string, error) {
	switch {
	case l.Up:
		return "it is up", nil
	case l.Master != "":
		return "it is a port of " + l.Master, nil
	case l.Type == netdriver.TypeTuntap && (l.TapOwner != in.TapOwner || l.TapGroup != in.TapOwner):
		return fmt.Sprintf("it is owned by %d:%d", l.TapOwner, l.TapGroup), nil
	}
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		addrs, err := d.AddrList(l.Name, fam)
		if err != nil {
			return "", err
		}
		if len(addrs) > 0 {
			return "it has address " + addrs[0].String(), nil
		}
	}
	if l.Type == netdriver.TypeBridge {
		links, err := d.LinkList()
		if err != nil {
			return "", err
		}
		for _, o := range links {
			if o.Master == l.Name {
				return "it has port " + o.Name, nil
			}
		}
	}
	return "", nil
}

// own checks a link found under one of phase1's names, marking it when it
// is an unmarked link as phase1 creates it in a resumed pair.
func own(d netdriver.Driver, in binding.Input, l *netdriver.Link, typ string) error {
	o, why, err := classify(d, in, l, typ)
	switch {
	case err != nil:
		return err
	case o == foreign:
		return &binding.ForeignLinkError{Name: l.Name, Type: l.Type, Want: typ, Reason: why}
	case o == adoptable:
		in.Logger.Info("marking a link an interrupted run created", "link", l.Name)
		if err := d.AddAltName(l.Name, in.Mark(typ)); err != nil {
			return err
		}
		l.AltNames = append(l.AltNames, in.Mark(typ))
	}
	return nil
}

// create runs add, then marks the new link of type typ; if marking fails
// the link is deleted again, so that no unmarked link of this run stays
// behind.
func create(d netdriver.Driver, in binding.Input, name, typ string, add func() error) (*netdriver.Link, error) {
	if err := add(); err != nil {
		return nil, err
	}
	if err := d.AddAltName(name, in.Mark(typ)); err != nil {
		if derr := d.DeleteLink(name); derr != nil {
			return nil, errors.Join(err, fmt.Errorf("delete unmarked %s: %w", name, derr))
		}
		return nil, err
	}
	return d.LinkByName(name)
}

// Preflight checks, before Prepare changes anything, that each named link
// is either absent or phase1's for this interface with the given type
// (see [Mark]), so that a foreign link is refused with nothing
// half-applied. Names are checked in order.
func Preflight(d netdriver.Driver, in binding.Input, want map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(want)) {
		l, err := Lookup(d, name)
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		o, why, err := classify(d, in, l, want[name])
		if err != nil {
			return err
		}
		if o == foreign {
			return &binding.ForeignLinkError{Name: name, Type: l.Type, Want: want[name], Reason: why}
		}
	}
	return nil
}

// EnsureDummy makes phase1's dummy named name (`ip link add NAME type
// dummy`, marked) or checks that the one there is phase1's.
func EnsureDummy(d netdriver.Driver, in binding.Input, name string) (*netdriver.Link, error) {
	return ensure(d, in, name, netdriver.TypeDummy, func() error { return d.AddDummy(name) })
}

// ensure creates the link of type typ named name with add, marked, or
// checks that the one there is phase1's ([own]).
func ensure(d netdriver.Driver, in binding.Input, name, typ string, add func() error) (*netdriver.Link, error) {
	l, err := Lookup(d, name)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return create(d, in, name, typ, add)
	}
	return l, own(d, in, l, typ)
}

// DeleteOwned deletes a link if it is phase1's for this interface with
// type typ (see [Mark]); any other link under that name is left alone.
func DeleteOwned(d netdriver.Driver, in binding.Input, name, typ string) error {
	return DeleteAllOwned(d, in, Owned{Name: name, Type: typ})
}

// Owned names a link phase1 made and its type, for [DeleteAllOwned].
type Owned struct{ Name, Type string }

// DeleteAllOwned deletes, of links, those that are phase1's for this
// interface with their type ([DeleteOwned]'s rule: any other link under
// such a name is left alone), all in one kernel operation when the driver
// can ([netdriver.LinksDeleter]: the kernel unregisters them together),
// else in order.
func DeleteAllOwned(d netdriver.Driver, in binding.Input, links ...Owned) error {
	var names []string
	for _, o := range links {
		l, err := Lookup(d, o.Name)
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		own, why, err := classify(d, in, l, o.Type)
		if err != nil {
			return err
		}
		if own == foreign {
			in.Logger.Warn("leaving a link phase1 did not create", "link", o.Name, "reason", why)
			continue
		}
		names = append(names, o.Name)
	}
	if ld, ok := d.(netdriver.LinksDeleter); ok {
		return ld.DeleteLinks(names...)
	}
	for _, name := range names {
		if err := d.DeleteLink(name); err != nil {
			return err
		}
	}
	return nil
}

// OwnedOrAbsent reports whether the link under name is phase1's for this
// interface with type typ, or absent; false for any other link.
func OwnedOrAbsent(d netdriver.Driver, in binding.Input, name, typ string) (bool, error) {
	l, err := Lookup(d, name)
	if err != nil || l == nil {
		return err == nil, err
	}
	o, _, err := classify(d, in, l, typ)
	if err != nil {
		return false, err
	}
	return o != foreign, nil
}

func isMark(alt string) bool { return strings.HasPrefix(alt, binding.MarkPrefix) }

// isMarked reports whether phase1 (for any VMI) marked l.
func isMarked(l *netdriver.Link) bool { return slices.ContainsFunc(l.AltNames, isMark) }

// checkNotPrepared refuses a pod link that phase1 already prepared: one
// that carries a mark, is a port of a k6t- or marked bridge, or has one of
// phase1's marked links (bridge, tap) or any link under the names in
// others (the bridge binding's renamed NIC) next to it.
func checkNotPrepared(d netdriver.Driver, in binding.Input, l *netdriver.Link, others ...string) error {
	fail := func(format string, args ...any) error {
		return &binding.PodLinkError{Name: l.Name, Reason: fmt.Sprintf(format, args...), Err: binding.ErrPrepared}
	}
	if isMarked(l) {
		return fail("carries phase1's mark (altnames %q)", l.AltNames)
	}
	if l.Master != "" {
		if strings.HasPrefix(l.Master, names.BridgePrefix) {
			return fail("is a port of bridge %s", l.Master)
		}
		m, err := Lookup(d, l.Master)
		if err != nil {
			return err
		}
		if m != nil && isMarked(m) {
			return fail("is a port of phase1's bridge %s", l.Master)
		}
	}
	for _, n := range []string{in.Names.Bridge, in.Names.Tap} {
		o, err := Lookup(d, n)
		if err != nil {
			return err
		}
		if o != nil && isMarked(o) {
			return fail("phase1's %s %s (altnames %q) is next to it", o.Type, n, o.AltNames)
		}
	}
	for _, n := range others {
		o, err := Lookup(d, n)
		if err != nil {
			return err
		}
		if o != nil {
			return fail("%s %s, the name phase1 renames it to, exists next to it", o.Type, n)
		}
	}
	return nil
}
