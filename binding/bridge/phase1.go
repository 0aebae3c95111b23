package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/virtnet/virtnet/binding/internal/kernelops"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
)

// NeedsRecord is true: Render takes the MAC, MTU, bridge and tap from
// phase1's record.
func (phase1) NeedsRecord() bool { return true }

// Discover reads the pod link (`ip -d link show eth0`, `ip addr`, `ip
// route`). A link phase1 already prepared (a dummy, bridge or tap in its
// place, a port of a k6t- bridge, phase1's bridge or tap or the renamed
// NIC next to it) is refused with [binding.ErrPrepared].
//
// A pod link with a global IPv6 address and an IPv6 default route gets
// its router's link-local address recorded (see [findRouterIPv6]): the
// guest's router advertisements name it.
func (phase1) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	link, err := kernelops.DiscoverPodLink(d, in, in.Names.NIC)
	if err != nil {
		return nil, err
	}
	if err := findRouterIPv6(ctx, d, in, link); err != nil {
		return nil, err
	}
	return link, nil
}

// routerResolveWait bounds each neighbour resolution of [findRouterIPv6]
// (the kernel gives up on a neighbour after 3 s).
const routerResolveWait = 4 * time.Second

// findRouterIPv6 records in link.RouterIPv6 the link-local address of the
// next hop of the link's IPv6 default route. Router advertisements must
// come from a link-local address, and the guest takes their source as its
// default router, so the guest can route as the pod did only through the
// gateway's link-local address:
//
//   - a link-local gateway (Calico's fe80::ecee:eeff:feee:eeee) is
//     recorded as it is;
//   - a global one (the bridge and ptp plugins' first address of the
//     subnet) is resolved to its MAC, and the link-local address the
//     kernel derives from that MAC (modified EUI-64, Linux's default for
//     the veths and bridges CNIs make) is recorded once the router
//     answers neighbour discovery for it with the same MAC.
//
// When the driver cannot resolve neighbours, or the router does not answer
// either, nothing is recorded and a warning says so: the guest gets its
// address and no IPv6 default route. Only ctx ending is an error.
func findRouterIPv6(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link) error {
	if _, v6 := kernelops.Addresses(link); len(v6) == 0 {
		return nil
	}
	var gw netip.Addr
	for _, r := range link.Routes {
		if r.Dst.Addr().Is6() && r.Dst.Bits() == 0 && r.Gateway.IsValid() {
			gw = r.Gateway
			break
		}
	}
	switch {
	case !gw.IsValid():
		return nil
	case gw.IsLinkLocalUnicast():
		link.RouterIPv6 = gw.WithZone("")
		return nil
	}
	res, ok := d.(netdriver.NeighborResolver)
	if !ok {
		in.Logger.Warn("the guest gets no IPv6 default route: the driver cannot resolve the gateway's link-local address", "link", link.Name, "gateway", gw.String())
		return nil
	}
	resolve := func(a netip.Addr) (net.HardwareAddr, error) {
		rctx, cancel := context.WithTimeout(ctx, routerResolveWait)
		defer cancel()
		return res.ResolveNeighbor(rctx, link.Name, a)
	}
	mac, err := resolve(gw)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.Logger.Warn("the guest gets no IPv6 default route: the gateway does not answer neighbour discovery", "link", link.Name, "gateway", gw.String(), "err", err)
		return nil
	}
	ll, ok := eui64LinkLocal(mac)
	if !ok {
		in.Logger.Warn("the guest gets no IPv6 default route: the gateway's link-layer address is not a MAC", "link", link.Name, "gateway", gw.String(), "lladdr", mac.String())
		return nil
	}
	if got, err := resolve(ll); err != nil || got.String() != mac.String() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		in.Logger.Warn("the guest gets no IPv6 default route: the gateway does not answer at its EUI-64 link-local address", "link", link.Name,
			"gateway", gw.String(), "mac", mac.String(), "linkLocal", ll.String(), "answered", fmt.Sprint(got), "err", err)
		return nil
	}
	link.RouterIPv6 = ll
	return nil
}

// eui64LinkLocal is the link-local address a MAC gives by modified
// EUI-64 (RFC 4291 appendix A).
func eui64LinkLocal(mac net.HardwareAddr) (netip.Addr, bool) {
	if len(mac) != 6 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16([16]byte{0: 0xfe, 1: 0x80, 8: mac[0] ^ 0x02, 9: mac[1], 10: mac[2], 11: 0xff, 12: 0xfe, 13: mac[3], 14: mac[4], 15: mac[5]}), true
}

// Plan computes the record: the VM takes the pod link's first IPv4
// address and a MAC (see [vmMAC]), and the pod link's IPv4 routing as the
// pod has it (see [guestRouting]); its first global IPv6 address as a /128
// (DHCPv6 IA_NA) and its IPv6 routing (see [guestRouting6]); its MTU; the
// DHCP server speaks from the bridge's link-local address. A clamp of
// api.GuestMTUAnnotation is refused ([binding.RefuseGuestMTU]). Without an
// IPv4 or IPv6 address IPAM is off: layer 2 only.
func (phase1) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("no discovery to plan from")
	}
	v4, v6 := kernelops.Addresses(link)
	if err := binding.RefuseGuestMTU(in, api.BindingBridge); err != nil {
		return nil, err
	}
	rec := &cache.Interface{
		Bridge:     in.Names.Bridge,
		Tap:        in.Names.Tap,
		MAC:        link.MAC,
		MTU:        link.MTU,
		Queues:     in.VMI.Queues(),
		ServerIPv4: names.BridgeLinkLocal(in.Pair.Index).Addr(),
	}
	var err error
	if rec.MAC, err = vmMAC(in, link); err != nil {
		return nil, err
	}
	if len(v4) == 0 && len(v6) == 0 {
		rec.IPAMDisabled = true
		rec.ServerIPv4 = netip.Addr{}
		return rec, nil
	}
	rec.NIC = in.Names.NIC
	if len(v4) == 0 {
		rec.ServerIPv4 = netip.Addr{}
	} else {
		rec.IPv4, rec.Gateway, rec.Routes = guestRouting(v4[0], link.Routes)
	}
	if len(v6) > 0 {
		rec.IPv6 = netip.PrefixFrom(v6[0].Addr(), 128)
		rec.GatewayIPv6, rec.OnLinkIPv6 = guestRouting6(v6[0], link.Routes)
		if rec.GatewayIPv6.IsValid() {
			rec.RouterIPv6 = link.RouterIPv6
		}
	}
	return rec, nil
}

// guestRouting6 is the IPv6 routing the VM gets from the pod link's
// address podIP and routes: the default route's gateway (none without one),
// which router advertisements name by its link-local address
// (Link.RouterIPv6), and podIP's prefix when the pod had it on-link (its
// connected route: the bridge plugin's), which they advertise as on-link
// but not for SLAAC (the address comes from DHCPv6 as a /128). ptp's pod
// has no connected route (its subnet goes through the gateway): no
// prefix, and the VM sends every packet to the router as the pod did.
func guestRouting6(podIP netip.Prefix, routes []cache.Route) (gateway netip.Addr, onLink netip.Prefix) {
	subnet := podIP.Masked()
	for _, r := range routes {
		if !r.Dst.Addr().Is6() {
			continue
		}
		switch {
		case r.Dst.Masked() == subnet && !r.Gateway.IsValid() && subnet.Bits() < 128:
			onLink = subnet
		case r.Dst.Bits() == 0 && r.Gateway.IsValid() && !gateway.IsValid():
			gateway = r.Gateway
		}
	}
	return gateway, onLink
}

// vmMAC is the VM's MAC as KubeVirt v1.9.0 picks it: the interface's
// macAddress, else the MAC status.interfaces reports for it, else the pod
// link's. The status comes second so that a VM keeps its MAC on another
// pod (after a migration the new pod link has another MAC, and a guest
// that reboots there asks DHCP from its old one: KubeVirt's bug #16696).
func vmMAC(in binding.Input, link *cache.Link) (cache.MAC, error) {
	if m := in.Pair.Interface.MacAddress; m != "" {
		mac, err := cache.ParseMAC(m)
		if err != nil {
			return cache.MAC{}, fmt.Errorf("macAddress %q: %w", m, err)
		}
		return mac, nil
	}
	hw, err := in.VMI.StatusMAC(in.Pair.Interface.Name)
	if err != nil {
		return cache.MAC{}, err
	}
	if hw != nil {
		if mac, ok := cache.MACFrom(hw); ok {
			return mac, nil
		}
		return cache.MAC{}, fmt.Errorf("status MAC %s: not a 48-bit MAC address", hw)
	}
	return link.MAC, nil
}

// guestRouting computes what the VM gets over DHCP from the pod link's
// address podIP and its routes (IPv6 routes are ignored): the VM's
// address with the prefix that is on-link for the pod, the default
// gateway (option 3; none when the pod link has no default route), and the
// routes of option 121 (every route of the link but the connected one).
//
//   - The connected route (podIP's prefix, no gateway) is what the VM's
//     kernel derives from the address and prefix: it is not sent.
//   - When the pod link has no connected route (ptp deletes it and routes
//     its subnet through the gateway, `10.244.2.0/24 via 10.244.2.1` next
//     to the on-link host route `10.244.2.1 scope link`), the subnet is
//     not on-link for the pod: the VM gets its address as a /32 and the
//     same routes, so that it sends its neighbours' traffic to the
//     gateway as the pod did instead of ARPing for them.
//   - A route's source address (ptp's `src 10.244.2.2`, the pod IP,
//     which the VM holds too) and metric do not travel over DHCP.
//   - Only a default route gives a gateway: a link whose one route is
//     `192.168.0.0/16 via 192.168.1.1` gives option 121 with that route
//     and no default route. KubeVirt v0.53 takes the first route's
//     gateway (a default route through a secondary network) and drops
//     routes whose source is the pod IP (ptp's, so ptp's neighbours are
//     unreachable).
func guestRouting(podIP netip.Prefix, routes []cache.Route) (addr netip.Prefix, gateway netip.Addr, out []cache.Route) {
	subnet := podIP.Masked()
	connected := false
	for _, r := range routes {
		if !r.Dst.Addr().Is4() {
			continue
		}
		if r.Dst.Masked() == subnet && !r.Gateway.IsValid() {
			connected = true
			continue
		}
		if r.Gateway.IsValid() && r.Dst.Bits() == 0 && !gateway.IsValid() {
			gateway = r.Gateway
		}
		route := cache.Route{Dst: r.Dst.Masked(), Gateway: r.Gateway}
		if !slices.Contains(out, route) {
			out = append(out, route)
		}
	}
	addr = podIP
	if !connected {
		addr = netip.PrefixFrom(podIP.Addr(), 32)
	}
	return addr, gateway, out
}

// Prepare builds, or finishes building, what the record describes:
//
//	ip link set eth0 down                       (IPAM only, from here ...)
//	ip addr del 10.244.1.7/24 dev eth0
//	ip link set eth0 name eth0-nic
//	ip link add eth0 type dummy
//	ip addr replace 10.244.1.7/24 dev eth0
//	sysctl net.ipv4.conf.all.arp_ignore=1       (... to here)
//	ip link add k6t-eth0 mtu 1440 address <bridge MAC> type bridge
//	ip link set eth0-nic address <bridge MAC>
//	ip addr replace 169.254.75.10/32 dev k6t-eth0
//	ethtool -K k6t-eth0 tx off
//	ip tuntap add tap0 mode tap user U group U [multi_queue]   (U: 0, or 107 for a non-root VMI); ip link set tap0 mtu 1440
//	ip link set eth0-nic master k6t-eth0; ip link set tap0 master k6t-eth0
//	ip link set k6t-eth0 up; ip link set tap0 up; ip link set eth0-nic up
//	bridge link set dev eth0-nic learning off
//
// Each line is skipped when the kernel already shows its effect, so that
// Prepare converges from any intermediate state.
func (phase1) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if link == nil || rec == nil {
		return errors.New("prepare needs the discovery and the record")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	want := map[string]string{rec.Bridge: netdriver.TypeBridge, rec.Tap: netdriver.TypeTuntap}
	if err := kernelops.Preflight(d, in, want); err != nil {
		return err
	}
	if !rec.IPAMDisabled {
		// The NIC is the pod link renamed: not marked, only its type
		// can be checked.
		if nic, err := kernelops.Lookup(d, rec.NIC); err != nil {
			return err
		} else if nic != nil && nic.Type != link.Type {
			return &binding.ForeignLinkError{Name: rec.NIC, Type: nic.Type, Want: link.Type}
		}
	}
	// The planned address (an interface prepared earlier keeps its own
	// when its index moved); the index's for a record without one.
	ll := names.BridgeLinkLocal(in.Pair.Index)
	if a := rec.ServerIPv4; a.Is4() {
		ll = netip.PrefixFrom(a, 32)
	}
	if err := kernelops.CheckAddressFree(d, ll.Addr(), rec.Bridge, rec.Bridge); err != nil {
		return err
	}
	var podIPs []netip.Prefix
	if !rec.IPAMDisabled {
		var err error
		if podIPs, err = podAddresses(link); err != nil {
			return err
		}
		for _, podIP := range podIPs {
			if err := kernelops.CheckAddressFree(d, podIP.Addr(), in.Names.Pod, in.Names.Pod, rec.NIC); err != nil {
				return err
			}
		}
	}
	nic := in.Names.Pod
	if !rec.IPAMDisabled {
		nic = rec.NIC
		if err := moveAddressToDummy(d, in, link, rec, podIPs); err != nil {
			return err
		}
	} else if err := checkPodLink(d, nic, link); err != nil {
		return err
	}
	mac := names.BridgeMAC(in.VMI.Metadata.UID, in.Pair.Interface.Name)
	br, err := kernelops.EnsureBridge(d, in, rec.Bridge, rec.MTU, mac)
	if err != nil {
		return err
	}
	nicLink, err := d.LinkByName(nic)
	if err != nil {
		return err
	}
	if nicLink.MAC.String() != mac.String() {
		if err := d.SetMAC(nic, mac); err != nil {
			return err
		}
	}
	if err := kernelops.EnsureAddr(d, rec.Bridge, ll); err != nil {
		return err
	}
	if err := kernelops.EnsureTXChecksumOff(d, rec.Bridge); err != nil {
		return err
	}
	tap := netdriver.Tap{Name: rec.Tap, Owner: in.TapOwner, Group: in.TapOwner, MultiQueue: rec.Queues > 1, MTU: rec.MTU}
	if err := kernelops.EnsureTap(d, in, tap, rec.Bridge); err != nil {
		return err
	}
	if nicLink.Master != rec.Bridge {
		if err := d.SetMaster(nic, rec.Bridge); err != nil {
			return err
		}
	}
	if !br.Up {
		if err := d.SetUp(rec.Bridge); err != nil {
			return err
		}
	}
	if nicLink, err = d.LinkByName(nic); err != nil {
		return err
	}
	if !nicLink.Up {
		if err := d.SetUp(nic); err != nil {
			return err
		}
	}
	if on, err := d.Learning(nic); err != nil {
		return err
	} else if on {
		return d.SetLearning(nic, false)
	}
	return nil
}

// podAddresses are the pod link's first IPv4 and first global IPv6
// address as discovered, which the dummy takes over (the record's are the
// VM's view of them, which can differ in their prefix).
func podAddresses(link *cache.Link) ([]netip.Prefix, error) {
	v4, v6 := kernelops.Addresses(link)
	var out []netip.Prefix
	if len(v4) > 0 {
		out = append(out, v4[0])
	}
	if len(v6) > 0 {
		out = append(out, v6[0])
	}
	if len(out) == 0 {
		return nil, &binding.PodLinkError{Name: link.Name, Reason: "the discovery recorded no IPv4 or IPv6 address", Err: binding.ErrNoAddress}
	}
	return out, nil
}

// checkPodLink checks that the pod link still is the one discovered.
func checkPodLink(d netdriver.Driver, name string, link *cache.Link) error {
	l, err := d.LinkByName(name)
	if err != nil {
		return &binding.PodLinkError{Name: name, Reason: "gone", Err: err}
	}
	if l.Type != link.Type {
		return &binding.ForeignLinkError{Name: name, Type: l.Type, Want: link.Type}
	}
	return nil
}

// addrNoDAD is IFA_F_NODAD.
const addrNoDAD = 0x02

// ensureDummyAddr gives the dummy the pod address p; an IPv6 one with
// nodad, so that the pod's address is never tentative on its way from the
// pod link to the dummy (duplicate address detection on a dummy would
// only delay it: the dummy has no neighbours).
func ensureDummyAddr(d netdriver.Driver, dummy string, p netip.Prefix) error {
	if p.Addr().Is4() {
		return kernelops.EnsureAddr(d, dummy, p)
	}
	if has, err := kernelops.HasAddr(d, dummy, p); err != nil || has {
		return err
	}
	return d.AddrReplaceFlags(dummy, netdriver.FlaggedAddr{Prefix: p, Flags: addrNoDAD})
}

// moveAddressToDummy renames the pod link to the NIC name and gives its
// IPv4 and IPv6 addresses podIPs ([podAddresses]) to a dummy under the pod
// link's name, so that the kubelet keeps seeing the pod IPs on eth0 after
// a restart.
func moveAddressToDummy(d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface, podIPs []netip.Prefix) error {
	pod, nic := in.Names.Pod, rec.NIC
	nicLink, err := kernelops.Lookup(d, nic)
	if err != nil {
		return err
	}
	podLink, err := kernelops.Lookup(d, pod)
	if err != nil {
		return err
	}
	// delAddrs deletes the pod addresses from the link holding them
	// (setting the link down already took its IPv6 ones away, unless
	// keep_addr_on_down is set).
	delAddrs := func(name string) error {
		for _, p := range podIPs {
			if has, err := kernelops.HasAddr(d, name, p); err != nil {
				return err
			} else if has {
				if err := d.AddrDel(name, p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if nicLink == nil {
		// Not renamed yet: the pod link must still be the CNI's.
		if podLink == nil {
			return &binding.PodLinkError{Name: pod, Reason: fmt.Sprintf("neither %s nor %s exists", pod, nic)}
		}
		if podLink.Type != link.Type {
			return &binding.ForeignLinkError{Name: pod, Type: podLink.Type, Want: link.Type}
		}
		if podLink.Up {
			if err := d.SetDown(pod); err != nil {
				return err
			}
		}
		if err := delAddrs(pod); err != nil {
			return err
		}
		if err := d.SetName(pod, nic); err != nil {
			return err
		}
	} else if nicLink.Type != link.Type {
		return &binding.ForeignLinkError{Name: nic, Type: nicLink.Type, Want: link.Type}
	} else if err := delAddrs(nic); err != nil {
		// Renamed by hand or by an older run before the addresses moved.
		return err
	}
	if _, err := kernelops.EnsureDummy(d, in, pod); err != nil {
		return err
	}
	for _, p := range podIPs {
		if err := ensureDummyAddr(d, pod, p); err != nil {
			return err
		}
	}
	if podIPs[0].Addr().Is4() {
		return kernelops.EnsureSysctl(d, "ipv4/conf/all/arp_ignore", "1")
	}
	return nil
}

// Cleanup returns the pod link to how the CNI left it: tap and bridge
// deleted, the dummy deleted, the NIC renamed back with its MAC, MTU,
// addresses and routes restored. Missing pieces are skipped; links under
// phase1's names that phase1 did not create are left alone
// ([kernelops.DeleteOwned]).
func (phase1) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := kernelops.DeleteAllOwned(d, in, kernelops.Owned{Name: in.Names.Tap, Type: netdriver.TypeTuntap},
		kernelops.Owned{Name: in.Names.Bridge, Type: netdriver.TypeBridge}); err != nil {
		return err
	}
	if link == nil {
		return nil
	}
	pod := in.Names.Pod
	if nic, err := kernelops.Lookup(d, in.Names.NIC); err != nil {
		return err
	} else if nic != nil {
		if err := kernelops.DeleteOwned(d, in, pod, netdriver.TypeDummy); err != nil {
			return err
		}
		if l, err := kernelops.Lookup(d, pod); err != nil {
			return err
		} else if l != nil {
			return &binding.ForeignLinkError{Name: pod, Type: l.Type, Reason: fmt.Sprintf("holds the pod link's name: %s cannot be renamed back", in.Names.NIC)}
		}
		if nic.Up {
			if err := d.SetDown(in.Names.NIC); err != nil {
				return err
			}
		}
		if err := d.SetName(in.Names.NIC, pod); err != nil {
			return err
		}
	}
	return kernelops.RestoreLink(ctx, d, link)
}
