package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/virtnet/virtnet/binding/internal/kernelops"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
)

// NeedsRecord is true: Render takes the MAC, MTU, bridge and tap from
// phase1's record.
func (Binding) NeedsRecord() bool { return true }

// Discover reads the pod link (`ip -d link show eth0`, `ip addr`, `ip
// route`). A link phase1 already prepared (a dummy, bridge or tap in its
// place, a port of a k6t- bridge, phase1's bridge or tap or the renamed
// NIC next to it) is refused with [binding.ErrPrepared].
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return kernelops.DiscoverPodLink(d, in, in.Names.NIC)
}

// Plan computes the record: the VM takes the pod link's first IPv4
// address and a MAC (see [vmMAC]), and the pod link's IPv4
// routing as the pod has it (see [guestRouting]); its MTU; the DHCP server
// speaks from the bridge's link-local address. Without an IPv4 address
// IPAM is off: layer 2 only.
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("no discovery to plan from")
	}
	v4, _, err := kernelops.Addresses(link)
	if err != nil {
		return nil, err
	}
	rec := &cache.Interface{
		Bridge:     in.Names.Bridge,
		Tap:        in.Names.Tap,
		MAC:        link.MAC,
		MTU:        link.MTU,
		Queues:     in.VMI.Queues(),
		ServerIPv4: names.BridgeLinkLocal(in.Pair.Index).Addr().String(),
	}
	if rec.MAC, err = vmMAC(in, link); err != nil {
		return nil, err
	}
	if len(v4) == 0 {
		rec.IPAMDisabled = true
		rec.ServerIPv4 = ""
		return rec, nil
	}
	rec.NIC = in.Names.NIC
	addr, gw, routes, err := guestRouting(v4[0], link.Routes)
	if err != nil {
		return nil, fmt.Errorf("routes of %s: %w", link.Name, err)
	}
	rec.IPv4, rec.Gateway, rec.Routes = addr.String(), gw, routes
	return rec, nil
}

// vmMAC is the VM's MAC as KubeVirt v1.9.0 picks it: the interface's
// macAddress, else the MAC status.interfaces reports for it, else the pod
// link's. The status comes second so that a VM keeps its MAC on another
// pod (after a migration the new pod link has another MAC, and a guest
// that reboots there asks DHCP from its old one: KubeVirt's bug #16696).
func vmMAC(in binding.Input, link *cache.Link) (string, error) {
	if m := in.Pair.Interface.MacAddress; m != "" {
		hw, err := net.ParseMAC(m)
		if err != nil {
			return "", fmt.Errorf("macAddress %q: %w", m, err)
		}
		return hw.String(), nil
	}
	hw, err := in.VMI.StatusMAC(in.Pair.Interface.Name)
	if err != nil {
		return "", err
	}
	if hw != nil {
		return hw.String(), nil
	}
	return link.MAC, nil
}

// guestRouting computes what the VM gets over DHCP from the pod link's
// address podIP and its routes (IPv6 routes are ignored): the VM's
// address with the prefix that is on-link for the pod, the default
// gateway (option 3; "" when the pod link has no default route), and the
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
func guestRouting(podIP netip.Prefix, routes []cache.Route) (addr netip.Prefix, gateway string, out []cache.Route, err error) {
	subnet := podIP.Masked()
	connected := false
	for _, r := range routes {
		dst, err := netip.ParsePrefix(r.Dst)
		if err != nil {
			return netip.Prefix{}, "", nil, fmt.Errorf("route %q: %w", r.Dst, err)
		}
		if !dst.Addr().Is4() {
			continue
		}
		if dst.Masked() == subnet && r.Gateway == "" {
			connected = true
			continue
		}
		if r.Gateway != "" && dst.Bits() == 0 && gateway == "" {
			gateway = r.Gateway
		}
		route := cache.Route{Dst: dst.Masked().String(), Gateway: r.Gateway}
		if !slices.Contains(out, route) {
			out = append(out, route)
		}
	}
	addr = podIP
	if !connected {
		addr = netip.PrefixFrom(podIP.Addr(), 32)
	}
	return addr, gateway, out, nil
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
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
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
	if a, err := netip.ParseAddr(rec.ServerIPv4); err == nil && a.Is4() {
		ll = netip.PrefixFrom(a, 32)
	}
	if err := kernelops.CheckAddressFree(d, ll.Addr(), rec.Bridge, rec.Bridge); err != nil {
		return err
	}
	if !rec.IPAMDisabled {
		podIP, err := podAddress(link)
		if err != nil {
			return err
		}
		if err := kernelops.CheckAddressFree(d, podIP.Addr(), in.Names.Pod, in.Names.Pod, rec.NIC); err != nil {
			return err
		}
	}
	nic := in.Names.Pod
	if !rec.IPAMDisabled {
		nic = rec.NIC
		if err := moveAddressToDummy(d, in, link, rec); err != nil {
			return err
		}
	} else if err := checkPodLink(d, nic, link); err != nil {
		return err
	}
	mac := names.BridgeMAC(in.VMI.Metadata.UID, in.Pair.Interface.Name)
	if _, err := kernelops.EnsureBridge(d, in, rec.Bridge, rec.MTU, mac); err != nil {
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
	br, err := d.LinkByName(rec.Bridge)
	if err != nil {
		return err
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

// podAddress is the pod link's IPv4 address as discovered, which the
// dummy takes over (the record's IPv4 is the VM's view of it, which can
// differ in its prefix).
func podAddress(link *cache.Link) (netip.Prefix, error) {
	v4, _, err := kernelops.Addresses(link)
	if err != nil {
		return netip.Prefix{}, err
	}
	if len(v4) == 0 {
		return netip.Prefix{}, &binding.PodLinkError{Name: link.Name, Reason: "the discovery recorded no IPv4 address", Err: binding.ErrNoAddress}
	}
	return v4[0], nil
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

// moveAddressToDummy renames the pod link to the NIC name and gives its
// IPv4 address to a dummy under the pod link's name, so that the kubelet
// keeps seeing the pod IP on eth0 after a restart.
func moveAddressToDummy(d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	podIP, err := podAddress(link)
	if err != nil {
		return err
	}
	pod, nic := in.Names.Pod, rec.NIC
	nicLink, err := kernelops.Lookup(d, nic)
	if err != nil {
		return err
	}
	podLink, err := kernelops.Lookup(d, pod)
	if err != nil {
		return err
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
		if err := d.AddrDel(pod, podIP); err != nil {
			return err
		}
		if err := d.SetName(pod, nic); err != nil {
			return err
		}
		podLink = nil
	} else if nicLink.Type != link.Type {
		return &binding.ForeignLinkError{Name: nic, Type: nicLink.Type, Want: link.Type}
	} else if addrs, err := d.AddrList(nic, netdriver.IPv4); err != nil {
		return err
	} else if slices.Contains(addrs, podIP) {
		// Renamed by hand or by an older run before the address moved.
		if err := d.AddrDel(nic, podIP); err != nil {
			return err
		}
	}
	if _, err := kernelops.EnsureDummy(d, in, pod); err != nil {
		return err
	}
	if err := kernelops.EnsureAddr(d, pod, podIP); err != nil {
		return err
	}
	return kernelops.EnsureSysctl(d, "ipv4/conf/all/arp_ignore", "1")
}

// Cleanup returns the pod link to how the CNI left it: tap and bridge
// deleted, the dummy deleted, the NIC renamed back with its MAC, MTU,
// addresses and routes restored. Missing pieces are skipped; links under
// phase1's names that phase1 did not create are left alone
// ([kernelops.DeleteOwned]).
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := kernelops.DeleteOwned(d, in, in.Names.Tap, netdriver.TypeTuntap); err != nil {
		return err
	}
	if err := kernelops.DeleteOwned(d, in, in.Names.Bridge, netdriver.TypeBridge); err != nil {
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
