package netdrivertest

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"slices"
	"sort"
	"sync"

	"github.com/virtnet/virtnet/netdriver"

	"golang.org/x/sys/unix"
)

// Fake is a stateful in-memory [netdriver.Driver] for unit tests. It behaves like the
// kernel where phase1 depends on it (EEXIST on a taken name, EBUSY when
// renaming a link that is up, routes that vanish with their link's address
// or when it goes down), records every mutating call in order, and can be
// told to fail the Nth mutating call. It is safe for concurrent use.
type Fake struct {
	mu    sync.Mutex
	links map[string]*netdriver.Link
	addrs map[int][]netip.Prefix // by link index
	// aflags are the settable IFA_F_* flags of addresses, by link index;
	// dropped the prefix routes deleted with RouteDel (the kernel adds
	// them back when the address is added again).
	aflags  map[int]map[netip.Addr]uint32
	dropped map[int]map[netip.Prefix]bool
	routes  []netdriver.Route // static routes; netdriver.Link is the index as name at use
	rlinks  []int             // link index of routes[i]
	sysctls map[string]string
	txcsum  map[int]bool
	// learning holds the bridge-port learning flag of enslaved links.
	learning map[int]bool
	// nat holds each family's table as NATRules lists it.
	nat     map[netdriver.Family][]string
	next    int
	calls   []string
	failAt  int
	failErr error
}

var _ netdriver.Driver = (*Fake)(nil)

// noPrefixRoute is IFA_F_NOPREFIXROUTE: the address brings no prefix route.
const noPrefixRoute = 0x200

// NewFake returns an empty namespace holding only "lo".
func NewFake() *Fake {
	f := &Fake{
		links:   map[string]*netdriver.Link{},
		addrs:   map[int][]netip.Prefix{},
		aflags:  map[int]map[netip.Addr]uint32{},
		dropped: map[int]map[netip.Prefix]bool{},
		// The kernel's defaults for the keys bindings read before
		// writing; other keys read "0".
		sysctls: map[string]string{
			"ipv4/ping_group_range":           "1\t0",
			"ipv4/ip_unprivileged_port_start": "1024",
		},
		txcsum:   map[int]bool{},
		learning: map[int]bool{},
		nat:      map[netdriver.Family][]string{},
		next:     1,
	}
	f.addLink(&netdriver.Link{Name: "lo", Type: netdriver.TypeDevice, MTU: 65536, Up: true})
	return f
}

// PodLink describes a pod link as a CNI plugin leaves it, for [Fake.SeedPodLink].
type PodLink struct {
	Name      string
	Type      string // netdriver.TypeVeth when empty
	MAC       net.HardwareAddr
	MTU       int
	Addresses []netip.Prefix
	// Routes are added with Link set to Name; a route with an invalid
	// Dst is skipped.
	Routes []netdriver.Route
}

// SeedPodLink adds an up link with its addresses and routes, bypassing
// the call log and failure injection.
func (f *Fake) SeedPodLink(p PodLink) {
	f.mu.Lock()
	defer f.mu.Unlock()
	typ := p.Type
	if typ == "" {
		typ = netdriver.TypeVeth
	}
	l := f.addLink(&netdriver.Link{Name: p.Name, Type: typ, MAC: p.MAC, MTU: p.MTU, Up: true, TapOwner: -1, TapGroup: -1})
	f.addrs[l.Index] = append([]netip.Prefix(nil), p.Addresses...)
	for _, r := range p.Routes {
		if r.Dst.IsValid() {
			f.routes = append(f.routes, r)
			f.rlinks = append(f.rlinks, l.Index)
		}
	}
}

// FailAt makes the nth mutating call (counted from 1 over the Fake's
// life) return err; n <= 0 disables failure injection.
func (f *Fake) FailAt(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt, f.failErr = n, err
}

// Calls returns the mutating calls made so far, e.g. "AddBridge k6t-eth0".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Snapshot is a comparable picture of the Fake's namespace.
type Snapshot struct {
	Links   []netdriver.Link
	Addrs   map[string][]netip.Prefix
	Routes  []netdriver.Route
	Sysctls map[string]string
	TXOff   []string
	// Learning lists the enslaved links with MAC learning on.
	Learning []string
	NAT      map[netdriver.Family][]string
}

// Snapshot returns the namespace's state in a stable order (for tests
// comparing the result of two runs).
func (f *Fake) Snapshot() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Snapshot{Addrs: map[string][]netip.Prefix{}, Sysctls: map[string]string{}, NAT: map[netdriver.Family][]string{}}
	names := make([]string, 0, len(f.links))
	for n := range f.links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l := *f.links[n]
		l.Index = 0 // indexes differ between runs that recreate links
		s.Links = append(s.Links, l)
		if a := f.addrs[f.links[n].Index]; len(a) > 0 {
			s.Addrs[n] = slices.Clone(a)
		}
		if on, ok := f.txcsum[f.links[n].Index]; ok && !on {
			s.TXOff = append(s.TXOff, n)
		}
		if f.learning[f.links[n].Index] {
			s.Learning = append(s.Learning, n)
		}
	}
	s.Routes = f.routesLocked(0, 0)
	sort.Slice(s.Routes, func(i, j int) bool {
		return s.Routes[i].Link+s.Routes[i].Dst.String() < s.Routes[j].Link+s.Routes[j].Dst.String()
	})
	for k, v := range f.sysctls {
		s.Sysctls[k] = v
	}
	for fam, lines := range f.nat {
		s.NAT[fam] = slices.Clone(lines)
	}
	return s
}

func (f *Fake) addLink(l *netdriver.Link) *netdriver.Link {
	l.Index = f.next
	f.next++
	if l.MAC == nil && l.Type != netdriver.TypeDevice {
		// Derived from the name so that recreating a link gives it the
		// same MAC, which keeps snapshots of two runs comparable.
		h := fnv.New32a()
		h.Write([]byte(l.Name))
		s := h.Sum32()
		l.MAC = net.HardwareAddr{0x0a, 0x58, byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}
	}
	if l.MTU == 0 {
		l.MTU = 1500
	}
	f.links[l.Name] = l
	return l
}

// change records a mutating call and, unless it is the call to fail,
// runs fn, under the lock.
func (f *Fake) change(call string, fn func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.failAt > 0 && len(f.calls) == f.failAt {
		return fmt.Errorf("fake: %s: %w", call, f.failErr)
	}
	return fn()
}

func (f *Fake) get(name string) (*netdriver.Link, error) {
	l, ok := f.links[name]
	if !ok {
		return nil, &netdriver.LinkNotFoundError{Name: name}
	}
	return l, nil
}

func (f *Fake) copyLink(l *netdriver.Link) *netdriver.Link {
	c := *l
	c.MAC = slices.Clone(l.MAC)
	c.AltNames = slices.Clone(l.AltNames)
	return &c
}

// view runs fn on the link named name under the lock.
func view[T any](f *Fake, name string, fn func(*netdriver.Link) (T, error)) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.get(name)
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(l)
}

// LinkByName implements [netdriver.Driver].
func (f *Fake) LinkByName(name string) (*netdriver.Link, error) {
	return view(f, name, func(l *netdriver.Link) (*netdriver.Link, error) { return f.copyLink(l), nil })
}

// LinkList implements [netdriver.Driver].
func (f *Fake) LinkList() ([]*netdriver.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*netdriver.Link, 0, len(f.links))
	for _, l := range f.links {
		out = append(out, f.copyLink(l))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

func (f *Fake) add(kind string, l *netdriver.Link) error {
	return f.change("Add"+kind+" "+l.Name, func() error {
		if _, ok := f.links[l.Name]; ok {
			return fmt.Errorf("add %s %q: %w", kind, l.Name, unix.EEXIST)
		}
		if len(l.Name) > 15 {
			return fmt.Errorf("add %s %q: %w", kind, l.Name, unix.EINVAL)
		}
		f.addLink(l)
		return nil
	})
}

// AddBridge implements [netdriver.Driver].
func (f *Fake) AddBridge(name string, mtu int, mac net.HardwareAddr) error {
	return f.add("Bridge", &netdriver.Link{Name: name, Type: netdriver.TypeBridge, MTU: mtu, MAC: slices.Clone(mac), TapOwner: -1, TapGroup: -1})
}

// AddDummy implements [netdriver.Driver].
func (f *Fake) AddDummy(name string) error {
	return f.add("Dummy", &netdriver.Link{Name: name, Type: netdriver.TypeDummy, NoARP: true, TapOwner: -1, TapGroup: -1})
}

// AddTap implements [netdriver.Driver].
func (f *Fake) AddTap(tap netdriver.Tap) error {
	return f.add("Tap", &netdriver.Link{Name: tap.Name, Type: netdriver.TypeTuntap, MTU: tap.MTU, TapOwner: tap.Owner, TapGroup: tap.Group, TapMultiQueue: tap.MultiQueue})
}

// DeleteLink implements [netdriver.Driver].
func (f *Fake) DeleteLink(name string) error {
	return f.change("DeleteLink "+name, func() error {
		l, ok := f.links[name]
		if !ok {
			return nil
		}
		delete(f.links, name)
		delete(f.addrs, l.Index)
		delete(f.aflags, l.Index)
		delete(f.dropped, l.Index)
		delete(f.txcsum, l.Index)
		delete(f.learning, l.Index)
		f.dropRoutes(l.Index, netip.Prefix{})
		for _, other := range f.links {
			if other.Master == name {
				other.Master = ""
				delete(f.learning, other.Index)
			}
		}
		return nil
	})
}

// mutate is change for a call on the link named name.
func (f *Fake) mutate(call, name string, fn func(*netdriver.Link) error) error {
	return f.change(call+" "+name, func() error {
		l, err := f.get(name)
		if err != nil {
			return fmt.Errorf("%s: %w", call, err)
		}
		return fn(l)
	})
}

// SetName implements [netdriver.Driver].
func (f *Fake) SetName(old, new string) error {
	return f.mutate("SetName "+new, old, func(l *netdriver.Link) error {
		if l.Up {
			return fmt.Errorf("rename %q: %w", old, unix.EBUSY)
		}
		if _, taken := f.links[new]; taken {
			return fmt.Errorf("rename %q to %q: %w", old, new, unix.EEXIST)
		}
		delete(f.links, old)
		l.Name = new
		f.links[new] = l
		for _, other := range f.links {
			if other.Master == old {
				other.Master = new
			}
		}
		return nil
	})
}

// SetUp implements [netdriver.Driver].
func (f *Fake) SetUp(name string) error {
	return f.mutate("SetUp", name, func(l *netdriver.Link) error { l.Up = true; return nil })
}

// SetDown implements [netdriver.Driver]: like the kernel, it drops the link's
// static routes.
func (f *Fake) SetDown(name string) error {
	return f.mutate("SetDown", name, func(l *netdriver.Link) error {
		l.Up = false
		f.dropRoutes(l.Index, netip.Prefix{})
		return nil
	})
}

// SetMAC implements [netdriver.Driver].
func (f *Fake) SetMAC(name string, mac net.HardwareAddr) error {
	return f.mutate("SetMAC "+mac.String(), name, func(l *netdriver.Link) error { l.MAC = slices.Clone(mac); return nil })
}

// SetMTU implements [netdriver.Driver].
func (f *Fake) SetMTU(name string, mtu int) error {
	return f.mutate(fmt.Sprintf("SetMTU %d", mtu), name, func(l *netdriver.Link) error { l.MTU = mtu; return nil })
}

// SetMaster implements [netdriver.Driver].
func (f *Fake) SetMaster(name, bridge string) error {
	return f.mutate("SetMaster "+bridge, name, func(l *netdriver.Link) error {
		if bridge == "" {
			l.Master = ""
			delete(f.learning, l.Index)
			return nil
		}
		b, err := f.get(bridge)
		if err != nil {
			return err
		}
		if b.Type != netdriver.TypeBridge {
			return fmt.Errorf("set master %q of %q: %w", bridge, name, unix.EOPNOTSUPP)
		}
		if l.Master != bridge {
			l.Master = bridge
			f.learning[l.Index] = true
		}
		return nil
	})
}

// Learning implements [netdriver.Driver].
func (f *Fake) Learning(name string) (bool, error) {
	return view(f, name, func(l *netdriver.Link) (bool, error) {
		if l.Master == "" {
			return false, fmt.Errorf("bridge port flags of %q: %w", name, unix.EOPNOTSUPP)
		}
		return f.learning[l.Index], nil
	})
}

// SetLearning implements [netdriver.Driver].
func (f *Fake) SetLearning(name string, on bool) error {
	return f.mutate(fmt.Sprintf("SetLearning %v", on), name, func(l *netdriver.Link) error {
		if l.Master == "" {
			return fmt.Errorf("set learning of %q: %w", name, unix.EOPNOTSUPP)
		}
		f.learning[l.Index] = on
		return nil
	})
}

// AddAltName implements [netdriver.Driver]. Alternative names share the namespace
// of link names: one taken by a link or another alternative name is
// EEXIST.
func (f *Fake) AddAltName(name, alt string) error {
	return f.mutate("AddAltName "+alt, name, func(l *netdriver.Link) error {
		if len(alt) > netdriver.MaxAltName || alt == "" {
			return fmt.Errorf("add altname to %q: %w", name, unix.EINVAL)
		}
		for _, o := range f.links {
			if o.Name == alt || slices.Contains(o.AltNames, alt) {
				return fmt.Errorf("add altname %q to %q: %w", alt, name, unix.EEXIST)
			}
		}
		l.AltNames = append(l.AltNames, alt)
		return nil
	})
}

// AddrList implements [netdriver.Driver].
func (f *Fake) AddrList(name string, family netdriver.Family) ([]netip.Prefix, error) {
	fas, err := f.AddrListFlags(name, family)
	var out []netip.Prefix
	for _, a := range fas {
		out = append(out, a.Prefix)
	}
	return out, err
}

// AddrOwners implements [netdriver.Driver].
func (f *Fake) AddrOwners(addr netip.Addr) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, l := range f.links {
		for _, a := range f.addrs[l.Index] {
			if a.Addr() == addr {
				out = append(out, l.Name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// AddrReplace implements [netdriver.Driver].
func (f *Fake) AddrReplace(name string, addr netip.Prefix) error {
	return f.AddrReplaceFlags(name, netdriver.FlaggedAddr{Prefix: addr})
}

// AddrReplaceFlags implements [netdriver.Driver]: the address keeps the
// settable flags given (DAD completes at once: no address is ever
// tentative here), and a new address brings its prefix route back. It is
// recorded as an AddrReplace call.
func (f *Fake) AddrReplaceFlags(name string, fa netdriver.FlaggedAddr) error {
	addr := fa.Prefix
	return f.mutate("AddrReplace "+addr.String(), name, func(l *netdriver.Link) error {
		if f.aflags[l.Index] == nil {
			f.aflags[l.Index] = map[netip.Addr]uint32{}
		}
		f.aflags[l.Index][addr.Addr()] = fa.Flags & netdriver.SettableAddrFlags
		as := f.addrs[l.Index]
		for i, a := range as {
			if a.Addr() == addr.Addr() {
				as[i] = addr
				return nil
			}
		}
		delete(f.dropped[l.Index], addr.Masked())
		f.addrs[l.Index] = append(as, addr)
		return nil
	})
}

// AddrListFlags implements [netdriver.Driver].
func (f *Fake) AddrListFlags(name string, family netdriver.Family) ([]netdriver.FlaggedAddr, error) {
	return view(f, name, func(l *netdriver.Link) (out []netdriver.FlaggedAddr, _ error) {
		for _, a := range f.addrs[l.Index] {
			if a.Addr().Is4() == (family == netdriver.IPv4) {
				out = append(out, netdriver.FlaggedAddr{Prefix: a, Flags: f.aflags[l.Index][a.Addr()]})
			}
		}
		return out, nil
	})
}

// RouteDel implements [netdriver.Driver]: a static route goes, a kernel
// prefix route is dropped until its address is added again.
func (f *Fake) RouteDel(r netdriver.Route) error {
	return f.mutate("RouteDel "+r.Dst.String(), r.Link, func(l *netdriver.Link) error {
		if r.Kernel {
			if f.dropped[l.Index] == nil {
				f.dropped[l.Index] = map[netip.Prefix]bool{}
			}
			f.dropped[l.Index][r.Dst] = true
			return nil
		}
		if i := f.route(l.Index, r); i >= 0 {
			f.routes = append(f.routes[:i:i], f.routes[i+1:]...)
			f.rlinks = append(f.rlinks[:i:i], f.rlinks[i+1:]...)
		}
		return nil
	})
}

// AddrDel implements [netdriver.Driver]: like the kernel, it drops the routes whose
// gateway was reachable only through that address.
func (f *Fake) AddrDel(name string, addr netip.Prefix) error {
	return f.mutate("AddrDel "+addr.String(), name, func(l *netdriver.Link) error {
		as := f.addrs[l.Index]
		for i, a := range as {
			if a.Addr() == addr.Addr() {
				f.addrs[l.Index] = append(as[:i:i], as[i+1:]...)
				delete(f.aflags[l.Index], a.Addr())
				f.dropRoutes(l.Index, addr.Masked())
				return nil
			}
		}
		return nil
	})
}

// dropRoutes removes the static routes of a link: all of them, or (when
// via is valid) those whose gateway lies in via.
func (f *Fake) dropRoutes(index int, via netip.Prefix) {
	var rs []netdriver.Route
	var ls []int
	for i, r := range f.routes {
		if f.rlinks[i] == index && (!via.IsValid() || (r.Gateway.IsValid() && via.Contains(r.Gateway)) || r.Src.IsValid()) {
			continue
		}
		rs, ls = append(rs, r), append(ls, f.rlinks[i])
	}
	f.routes, f.rlinks = rs, ls
}

// route returns the position of the static route of link index with r's
// destination and priority, or -1.
func (f *Fake) route(index int, r netdriver.Route) int {
	for i, old := range f.routes {
		if f.rlinks[i] == index && old.Dst == r.Dst && old.Priority == r.Priority {
			return i
		}
	}
	return -1
}

func (f *Fake) linkName(index int) string {
	for _, l := range f.links {
		if l.Index == index {
			return l.Name
		}
	}
	return ""
}

// routesLocked returns the routes of a link index (0: all) and family (0:
// both), the kernel's connected routes included.
func (f *Fake) routesLocked(index int, family netdriver.Family) []netdriver.Route {
	var out []netdriver.Route
	for _, l := range f.links {
		if (index != 0 && l.Index != index) || !l.Up {
			continue
		}
		for _, a := range f.addrs[l.Index] {
			if family != 0 && a.Addr().Is4() != (family == netdriver.IPv4) || a.Bits() == a.Addr().BitLen() ||
				f.dropped[l.Index][a.Masked()] || f.aflags[l.Index][a.Addr()]&noPrefixRoute != 0 {
				continue
			}
			r := netdriver.Route{Dst: a.Masked(), Link: l.Name, Kernel: true}
			if a.Addr().Is4() {
				r.Src = a.Addr()
			}
			out = append(out, r)
		}
	}
	for i, r := range f.routes {
		if (index != 0 && f.rlinks[i] != index) || (family != 0 && r.Dst.Addr().Is4() != (family == netdriver.IPv4)) {
			continue
		}
		r.Link = f.linkName(f.rlinks[i])
		out = append(out, r)
	}
	return out
}

// RouteList implements [netdriver.Driver].
func (f *Fake) RouteList(name string, family netdriver.Family) ([]netdriver.Route, error) {
	return view(f, name, func(l *netdriver.Link) ([]netdriver.Route, error) { return f.routesLocked(l.Index, family), nil })
}

// RouteReplace implements [netdriver.Driver].
func (f *Fake) RouteReplace(r netdriver.Route) error {
	return f.mutate("RouteReplace "+r.Dst.String(), r.Link, func(l *netdriver.Link) error {
		if r.Kernel {
			return nil
		}
		if i := f.route(l.Index, r); i >= 0 {
			f.routes[i] = r
			return nil
		}
		f.routes = append(f.routes, r)
		f.rlinks = append(f.rlinks, l.Index)
		return nil
	})
}

// Sysctl implements [netdriver.Driver]; unset keys read "0".
func (f *Fake) Sysctl(key string) (string, error) {
	if _, err := netdriver.SysctlPath(key); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.sysctls[key]; ok {
		return v, nil
	}
	return "0", nil
}

// SetSysctl implements [netdriver.Driver].
func (f *Fake) SetSysctl(key, value string) error {
	if _, err := netdriver.SysctlPath(key); err != nil {
		return err
	}
	return f.change("SetSysctl "+key+"="+value, func() error {
		f.sysctls[key] = value
		return nil
	})
}

// TXChecksum implements [netdriver.Driver]; links start with it on.
func (f *Fake) TXChecksum(name string) (bool, error) {
	return view(f, name, func(l *netdriver.Link) (bool, error) {
		on, ok := f.txcsum[l.Index]
		return on || !ok, nil
	})
}

// SetTXChecksum implements [netdriver.Driver].
func (f *Fake) SetTXChecksum(name string, on bool) error {
	return f.mutate(fmt.Sprintf("SetTXChecksum %v", on), name, func(l *netdriver.Link) error {
		f.txcsum[l.Index] = on
		return nil
	})
}

// ApplyNAT implements [netdriver.Driver]: the table holds nat's listing.
func (f *Fake) ApplyNAT(nat netdriver.NAT) error {
	lines, err := netdriver.NATListing(nat)
	if err != nil {
		return err
	}
	return f.change(fmt.Sprintf("ApplyNAT ipv%d", nat.Family), func() error {
		f.nat[nat.Family] = lines
		return nil
	})
}

// DeleteNAT implements [netdriver.Driver].
func (f *Fake) DeleteNAT(family netdriver.Family) error {
	return f.change(fmt.Sprintf("DeleteNAT ipv%d", family), func() error {
		delete(f.nat, family)
		return nil
	})
}

// NATRules implements [netdriver.Driver].
func (f *Fake) NATRules(family netdriver.Family) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nat[family]), nil
}
