package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/netdriver"
)

// NeedsRecord is true: Render takes the MAC, MTU, bridge and tap from
// phase1's record.
func (Binding) NeedsRecord() bool { return true }

// Discover reads the pod link (`ip -d link show eth0`, `ip addr`, `ip
// route`). A link of a type phase1 creates in its place (dummy, bridge,
// tap) is refused.
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return binding.DiscoverLink(d, in.Names.Pod)
}

// Plan computes the record: the VM takes the pod link's first IPv4
// address and MAC (or the VMI's macAddress), the gateway of the default
// route, the pod link's routes other than the one the kernel derives from
// the pod address, its MTU; the DHCP server speaks from the bridge's
// link-local address. Without an IPv4 address IPAM is off: layer 2 only.
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("bridge: no discovery to plan from")
	}
	v4, _, err := binding.Addresses(link)
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
	if m := in.Pair.Interface.MacAddress; m != "" {
		hw, err := net.ParseMAC(m)
		if err != nil {
			return nil, fmt.Errorf("macAddress %q: %w", m, err)
		}
		rec.MAC = hw.String()
	}
	if len(v4) == 0 {
		rec.IPAMDisabled = true
		rec.ServerIPv4 = ""
		return rec, nil
	}
	podIP := v4[0]
	rec.NIC = in.Names.NIC
	rec.IPv4 = podIP.String()
	for _, r := range link.Routes {
		dst, err := netip.ParsePrefix(r.Dst)
		if err != nil || !dst.Addr().Is4() {
			continue
		}
		if r.Gateway != "" && rec.Gateway == "" && dst.Bits() == 0 {
			rec.Gateway = r.Gateway
		}
		// The route the kernel derives from the pod address is the
		// VM's connected route already.
		if r.Src == podIP.Addr().String() || r.Kernel || (r.Dst == "" && r.Gateway == "" && r.Src == "") {
			continue
		}
		rec.Routes = append(rec.Routes, cache.Route{Dst: r.Dst, Gateway: r.Gateway, Metric: r.Metric})
	}
	if rec.Gateway == "" {
		for _, r := range rec.Routes {
			if r.Gateway != "" {
				rec.Gateway = r.Gateway
				break
			}
		}
	}
	if rec.Gateway == "" {
		return nil, fmt.Errorf("no gateway address found in the routes of %s", link.Name)
	}
	return rec, nil
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
//	ip tuntap add tap0 mode tap user 107 group 107 [multi_queue]; ip link set tap0 mtu 1440
//	ip link set eth0-nic master k6t-eth0; ip link set tap0 master k6t-eth0
//	ip link set k6t-eth0 up; ip link set tap0 up; ip link set eth0-nic up
//	bridge link set dev eth0-nic learning off
//
// Each line is skipped when the kernel already shows its effect, so that
// Prepare converges from any intermediate state.
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if link == nil || rec == nil {
		return fmt.Errorf("bridge: interface %q: prepare needs the discovery and the record", in.Pair.Interface.Name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	want := map[string]string{rec.Bridge: netdriver.TypeBridge, rec.Tap: netdriver.TypeTuntap}
	if !rec.IPAMDisabled {
		want[rec.NIC] = link.Type
	}
	if err := binding.Preflight(d, want); err != nil {
		return err
	}
	ll := names.BridgeLinkLocal(in.Pair.Index)
	if err := binding.CheckAddressFree(d, ll.Addr(), rec.Bridge, rec.Bridge); err != nil {
		return err
	}
	if !rec.IPAMDisabled {
		podIP, err := netip.ParsePrefix(rec.IPv4)
		if err != nil {
			return fmt.Errorf("record ipv4 %q: %w", rec.IPv4, err)
		}
		if err := binding.CheckAddressFree(d, podIP.Addr(), in.Names.Pod, in.Names.Pod, rec.NIC); err != nil {
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
	if _, err := binding.EnsureBridge(d, rec.Bridge, rec.MTU, mac); err != nil {
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
	if err := binding.EnsureAddr(d, rec.Bridge, ll); err != nil {
		return err
	}
	if err := binding.EnsureTXChecksumOff(d, rec.Bridge); err != nil {
		return err
	}
	tap := netdriver.Tap{Name: rec.Tap, Owner: in.TapOwner, Group: in.TapOwner, MultiQueue: rec.Queues > 1, MTU: rec.MTU}
	if err := binding.EnsureTap(d, tap, rec.Bridge); err != nil {
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
	podIP, err := netip.ParsePrefix(rec.IPv4)
	if err != nil {
		return fmt.Errorf("record ipv4 %q: %w", rec.IPv4, err)
	}
	pod, nic := in.Names.Pod, rec.NIC
	nicLink, err := binding.Lookup(d, nic)
	if err != nil {
		return err
	}
	podLink, err := binding.Lookup(d, pod)
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
	if podLink == nil {
		if err := d.AddDummy(pod); err != nil {
			return err
		}
	} else if podLink.Type != netdriver.TypeDummy {
		return &binding.ForeignLinkError{Name: pod, Type: podLink.Type, Want: netdriver.TypeDummy}
	}
	if err := binding.EnsureAddr(d, pod, podIP); err != nil {
		return err
	}
	return binding.EnsureSysctl(d, "ipv4/conf/all/arp_ignore", "1")
}

// Cleanup returns the pod link to how the CNI left it: tap and bridge
// deleted, the dummy deleted, the NIC renamed back with its MAC, MTU,
// addresses and routes restored. Missing pieces are skipped.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if err := binding.DeleteIfType(d, in.Names.Tap, netdriver.TypeTuntap); err != nil {
		return err
	}
	if err := binding.DeleteIfType(d, in.Names.Bridge, netdriver.TypeBridge); err != nil {
		return err
	}
	if link == nil {
		return nil
	}
	pod := in.Names.Pod
	if nic, err := binding.Lookup(d, in.Names.NIC); err != nil {
		return err
	} else if nic != nil {
		if err := binding.DeleteIfType(d, pod, netdriver.TypeDummy); err != nil {
			return err
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
	return binding.RestoreLink(d, link)
}
