package masquerade

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/virtnet/virtnet/binding/internal/kernelops"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver"
)

// migrationPorts are libvirt's migration ports; connections to them from
// the pod's loopback are never forwarded to the VM.
func migrationPorts() []uint16 { return []uint16{49152, 49153} }

// NeedsRecord is true: Render takes the MAC, MTU, bridge and tap from
// phase1's record.
func (Binding) NeedsRecord() bool { return true }

// Discover reads the pod link; it stays as the CNI left it. A link
// phase1 already prepared (a port of a k6t- bridge, phase1's bridge or
// tap next to it) is refused with [binding.ErrPrepared].
func (Binding) Discover(ctx context.Context, d netdriver.Driver, in binding.Input) (*cache.Link, error) {
	return kernelops.DiscoverPodLink(d, in)
}

// Subnet is one family of the VM's masquerade network: the gateway (on the
// bridge) is its second address, the VM its third, both with the
// network's prefix.
type Subnet struct {
	Gateway, VM netip.Prefix
}

// Subnets computes the IPv4 and IPv6 subnets from the pod network's CIDRs
// (KubeVirt's defaults when empty). A family the pod link has no global
// address of is left invalid.
func Subnets(net *api.Network, hasV4, hasV6 bool) (v4, v6 Subnet, err error) {
	cidr4, cidr6 := api.DefaultVMNetworkCIDR, api.DefaultVMIPv6NetworkCIDR
	if net != nil && net.Pod != nil {
		if net.Pod.VMNetworkCIDR != "" {
			cidr4 = net.Pod.VMNetworkCIDR
		}
		if net.Pod.VMIPv6NetworkCIDR != "" {
			cidr6 = net.Pod.VMIPv6NetworkCIDR
		}
	}
	if hasV4 {
		if v4, err = subnet(cidr4); err != nil {
			return v4, v6, fmt.Errorf("vmNetworkCIDR: %w", err)
		}
	}
	if hasV6 {
		if v6, err = subnet(cidr6); err != nil {
			return v4, v6, fmt.Errorf("vmIPv6NetworkCIDR: %w", err)
		}
	}
	return v4, v6, nil
}

func subnet(cidr string) (Subnet, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return Subnet{}, fmt.Errorf("%q: %w", cidr, err)
	}
	if p.Addr().BitLen()-p.Bits() < 2 {
		return Subnet{}, fmt.Errorf("%q: less than 4 addresses", cidr)
	}
	gw := p.Masked().Addr().Next()
	return Subnet{Gateway: netip.PrefixFrom(gw, p.Bits()), VM: netip.PrefixFrom(gw.Next(), p.Bits())}, nil
}

// Plan computes the record: bridge and tap names, the VM's MAC (the VMI's
// macAddress, else one derived from the VMI UID and interface name), the
// pod link's MTU (or the smaller clamp of api.GuestMTUAnnotation, which
// the bridge, the tap, the domain's <mtu> and DHCP option 26 and the
// router advertisements' MTU all take from the record; the pod link keeps
// its own and the pod namespace, routing between the two, tells senders
// of bigger packets so), and per family the VM address and gateway.
func (Binding) Plan(in binding.Input, link *cache.Link) (*cache.Interface, error) {
	if link == nil {
		return nil, errors.New("no discovery to plan from")
	}
	pv4, pv6 := kernelops.Addresses(link)
	if len(pv4) == 0 && len(pv6) == 0 {
		return nil, fmt.Errorf("%s: %w", link.Name, binding.ErrNoAddress)
	}
	v4, v6, err := Subnets(in.Pair.Network, len(pv4) > 0, len(pv6) > 0)
	if err != nil {
		return nil, err
	}
	if err := checkOverlap(link, v4, v6); err != nil {
		return nil, err
	}
	mac, _ := cache.MACFrom(names.VMMAC(in.VMI.Metadata.UID, in.Pair.Interface.Name))
	if m := in.Pair.Interface.MacAddress; m != "" {
		if mac, err = cache.ParseMAC(m); err != nil {
			return nil, fmt.Errorf("macAddress %q: %w", m, err)
		}
	}
	mtu, err := binding.GuestMTU(in, link.Name, link.MTU)
	if err != nil {
		return nil, err
	}
	rec := &cache.Interface{
		Bridge: in.Names.Bridge,
		Tap:    in.Names.Tap,
		MAC:    mac,
		MTU:    mtu,
		Queues: in.VMI.Queues(),
	}
	if v4.VM.IsValid() {
		rec.IPv4, rec.Gateway, rec.ServerIPv4 = v4.VM, v4.Gateway.Addr(), v4.Gateway.Addr()
	}
	if v6.VM.IsValid() {
		rec.IPv6, rec.GatewayIPv6, rec.ServerIPv6 = v6.VM, v6.Gateway.Addr(), v6.Gateway.Addr()
	}
	return rec, nil
}

// Prepare builds, or finishes building:
//
//	ip link add k6t-eth0 mtu 1440 address 02:00:00:00:00:00 type bridge
//	ip addr replace 10.0.2.1/24 dev k6t-eth0 [; ip addr replace fd10:0:2::1/120 dev k6t-eth0]
//	ethtool -K k6t-eth0 tx off; ip link set k6t-eth0 up
//	ip tuntap add tap0 mode tap user U group U [multi_queue]   (U: 0, or 107 for a non-root VMI); ip link set tap0 mtu 1440 master k6t-eth0 up
//	sysctl net.ipv4.ip_forward=1 net.ipv4.conf.k6t-eth0.route_localnet=1 [net.ipv6.conf.all.forwarding=1]
//	the virtnet_nat table of each family (see [netdriver.NAT])
func (Binding) Prepare(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	if link == nil || rec == nil {
		return errors.New("prepare needs the discovery and the record")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := d.LinkByName(in.Names.Pod); err != nil {
		return &binding.PodLinkError{Name: in.Names.Pod, Reason: "gone", Err: err}
	}
	if err := kernelops.Preflight(d, in, map[string]string{rec.Bridge: netdriver.TypeBridge, rec.Tap: netdriver.TypeTuntap}); err != nil {
		return err
	}
	type fam struct {
		family  netdriver.Family
		vm      netip.Prefix
		gateway netip.Addr
	}
	var fams []fam
	if rec.IPv4.IsValid() {
		fams = append(fams, fam{netdriver.IPv4, rec.IPv4, rec.Gateway})
	}
	if rec.IPv6.IsValid() {
		fams = append(fams, fam{netdriver.IPv6, rec.IPv6, rec.GatewayIPv6})
	}
	for _, f := range fams {
		if !f.gateway.IsValid() {
			return fmt.Errorf("record has no IPv%d gateway", f.family)
		}
		if err := kernelops.CheckAddressFree(d, f.gateway, rec.Bridge, rec.Bridge); err != nil {
			return err
		}
	}
	mac, _ := net.ParseMAC(api.MasqueradeBridgeMAC) // a constant that parses
	br, err := kernelops.EnsureBridge(d, in, rec.Bridge, rec.MTU, mac)
	if err != nil {
		return err
	}
	if rec.IPv6.IsValid() {
		// Skip duplicate address detection on the bridge: until its
		// link-local address leaves DAD, inbound IPv6 to the VM is
		// dropped (measured in the NAT tests). The bridge is ours alone.
		if err := kernelops.EnsureSysctl(d, "ipv6/conf/"+rec.Bridge+"/accept_dad", "0"); err != nil {
			return err
		}
	}
	var gateways []netip.Prefix
	for _, f := range fams {
		p := netip.PrefixFrom(f.gateway, f.vm.Bits())
		gateways = append(gateways, p)
		if err := kernelops.EnsureAddr(d, rec.Bridge, p); err != nil {
			return err
		}
	}
	// The bridge is phase1's alone: a gateway address of an earlier VM
	// network (a re-run with another vmNetworkCIDR) goes.
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		addrs, err := d.AddrList(rec.Bridge, fam)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if a.Addr().IsGlobalUnicast() && !slices.Contains(gateways, a) {
				if err := d.AddrDel(rec.Bridge, a); err != nil {
					return err
				}
			}
		}
	}
	if err := kernelops.EnsureTXChecksumOff(d, rec.Bridge); err != nil {
		return err
	}
	if !br.Up {
		if err := d.SetUp(rec.Bridge); err != nil {
			return err
		}
	}
	tap := netdriver.Tap{Name: rec.Tap, Owner: in.TapOwner, Group: in.TapOwner, MultiQueue: rec.Queues > 1, MTU: rec.MTU}
	if err := kernelops.EnsureTap(d, in, tap, rec.Bridge); err != nil {
		return err
	}
	for _, f := range fams {
		for _, s := range netdriver.NATSysctls(f.family, rec.Bridge) {
			if err := kernelops.EnsureSysctl(d, s.Key, s.Value); err != nil {
				return err
			}
		}
		nat, err := PlanNAT(in, link, f.family, rec.Bridge, f.vm.Addr(), f.gateway)
		if err != nil {
			return err
		}
		want, err := netdriver.NATListing(nat)
		if err != nil {
			return err
		}
		have, err := d.NATRules(f.family)
		if err != nil {
			return err
		}
		if slices.Equal(have, want) {
			continue
		}
		if err := d.ApplyNAT(nat); err != nil {
			return err
		}
	}
	return nil
}

// PlanNAT is the rule set of one family for the VM at vm behind gateway
// gw on bridge, after KubeVirt v0.53:
//
//   - the interface's ports are forwarded, every port when none is
//     declared;
//   - libvirt's migration ports from loopback are returned (not
//     forwarded) unless status.migrationTransport is Unix, which v0.53
//     sets on every new VMI;
//   - with the annotation sidecar.istio.io/inject: "true", Istio's rules
//     ([netdriver.NATProxy]): Envoy's ports returned, no catch-all DNAT
//     from outside (only ssh, 22), 127.0.0.6 SNAT-ed like loopback and,
//     for IPv4, the output chain DNAT-ing the pod's own address (its first
//     global IPv4 address) to the VM.
func PlanNAT(in binding.Input, link *cache.Link, family netdriver.Family, bridge string, vm, gw netip.Addr) (netdriver.NAT, error) {
	nat := netdriver.NAT{
		Family:       family,
		PodInterface: in.Names.Pod,
		Bridge:       bridge,
		VM:           vm,
		Gateway:      gw,
		Ports:        append(natPorts(in.Pair.Interface.Ports), natPortRanges(in.Pair.Interface.PortRanges)...),
	}
	if !in.VMI.MigratesOverUnix() {
		nat.MigrationPorts = migrationPorts()
	}
	if in.VMI.IstioProxy() {
		p := &netdriver.NATProxy{ReservedPorts: netdriver.IstioReservedPorts(), NonProxiedPorts: netdriver.IstioNonProxiedPorts()}
		if family == netdriver.IPv4 {
			p.Source = netdriver.IstioPassthroughSource()
			v4, _ := kernelops.Addresses(link)
			for _, a := range v4 {
				if a.Addr().IsGlobalUnicast() {
					p.PodAddress = a.Addr()
					break
				}
			}
			if !p.PodAddress.IsValid() {
				return nat, fmt.Errorf("%s: istio needs the pod's IPv4 address: %w", in.Names.Pod, binding.ErrNoAddress)
			}
		}
		nat.Proxy = p
	}
	return nat, nil
}

// natPortRanges are the ports of KubeVirt 1.x's portRanges, one by one:
// the rule set groups consecutive ports into one interval of its port set
// (netdriver.NAT.Rules), so a range becomes `tcp dport 8000-8010`, as
// KubeVirt v1.9 writes it, and at most ten ranges stay ten intervals
// whatever their size. The ranges are validated (api.Validate); one out of
// 1-65535 is skipped, never widened.
func natPortRanges(ranges []api.PortRange) []netdriver.NATPort {
	var out []netdriver.NATPort
	for _, r := range ranges {
		proto := "tcp"
		if r.Protocol == "UDP" {
			proto = "udp"
		}
		if r.Start < 1 || r.End > 65535 || r.Start > r.End {
			continue
		}
		for p := int(r.Start); p <= int(r.End); p++ {
			out = append(out, netdriver.NATPort{Protocol: proto, Port: uint16(p)})
		}
	}
	return out
}

// natPorts are the declared ports, each once (KubeVirt v0.53 accepts a
// port declared twice).
func natPorts(ports []api.Port) []netdriver.NATPort {
	var out []netdriver.NATPort
	for _, p := range ports {
		proto := "tcp"
		if p.Protocol == "UDP" {
			proto = "udp"
		}
		np := netdriver.NATPort{Protocol: proto, Port: uint16(p.Port)}
		if !slices.Contains(out, np) {
			out = append(out, np)
		}
	}
	return out
}

// Cleanup removes the NAT tables, the tap and the bridge (only links
// phase1 created: [kernelops.DeleteOwned]). The pod link was never changed.
// The NAT tables are the namespace's, not the interface's: they are
// dropped only when the bridge under the interface's name is this
// interface's (its mark) or absent, never when it is another VMI's or
// interface's, so that a cleanup given the wrong namespace or records
// leaves another VM's NAT alone.
func (Binding) Cleanup(ctx context.Context, d netdriver.Driver, in binding.Input, link *cache.Link, rec *cache.Interface) error {
	ours, err := kernelops.OwnedOrAbsent(d, in, in.Names.Bridge, netdriver.TypeBridge)
	if err != nil {
		return err
	}
	if !ours {
		in.Logger.Warn("leaving the NAT tables: the bridge is not this interface's", "bridge", in.Names.Bridge)
		return kernelops.DeleteOwned(d, in, in.Names.Tap, netdriver.TypeTuntap)
	}
	for _, f := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		if err := d.DeleteNAT(f); err != nil {
			return err
		}
	}
	return kernelops.DeleteAllOwned(d, in, kernelops.Owned{Name: in.Names.Tap, Type: netdriver.TypeTuntap},
		kernelops.Owned{Name: in.Names.Bridge, Type: netdriver.TypeBridge})
}
