package bridge

import (
	"encoding"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
)

// planInput is the input of the one bridge interface of a VMI on a
// secondary (Multus) network, pod link net1.
func planInput(t *testing.T) binding.Input {
	t.Helper()
	v := &api.VMI{Metadata: api.ObjectMeta{Name: "vmi-bridge", Namespace: "default", UID: "u1"}}
	v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "blue", Bridge: &struct{}{}}}
	v.Spec.Networks = []api.Network{{Name: "blue", Multus: &api.MultusNetwork{NetworkName: "blue-net"}}}
	api.SetDefaults(v)
	require.NoError(t, api.Validate(v))
	ps, err := api.Pairs(v)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return binding.Input{VMI: v, Pair: ps[0], Names: binding.Names{Pod: "net1", NIC: "net1-nic", Bridge: "k6t-net1", Tap: "tap1"}}
}

// TestPlanRouting: what the VM is told over DHCP for the pod link shapes
// real CNIs leave (the routes as RouteList reports them).
func TestPlanRouting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		addr    netip.Prefix
		routes  []cache.Route
		wantIP  netip.Prefix
		wantGW  netip.Addr
		wantRts []cache.Route
	}{{
		name: "default route (bridge plugin, kindnet's eth0 seen by most CNIs)",
		addr: netip.MustParsePrefix("10.244.1.7/24"),
		routes: []cache.Route{
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")},
			{Dst: netip.MustParsePrefix("10.244.1.0/24"), Src: netip.MustParseAddr("10.244.1.7"), Kernel: true},
		},
		wantIP: netip.MustParsePrefix("10.244.1.7/24"), wantGW: netip.MustParseAddr("10.244.1.1"),
		wantRts: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}},
	}, {
		// #12.1: host-local without "gateway", whereabouts.
		name:   "IPAM without a gateway: the address alone",
		addr:   netip.MustParsePrefix("192.168.1.5/24"),
		routes: []cache.Route{{Dst: netip.MustParsePrefix("192.168.1.0/24"), Src: netip.MustParseAddr("192.168.1.5"), Kernel: true}},
		wantIP: netip.MustParsePrefix("192.168.1.5/24"),
	}, {
		// #12.2: never a default route the pod did not have.
		name: "one static route: no gateway",
		addr: netip.MustParsePrefix("192.168.1.5/24"),
		routes: []cache.Route{
			{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("192.168.1.1")},
			{Dst: netip.MustParsePrefix("192.168.1.0/24"), Src: netip.MustParseAddr("192.168.1.5"), Kernel: true},
		},
		wantIP:  netip.MustParsePrefix("192.168.1.5/24"),
		wantRts: []cache.Route{{Dst: netip.MustParsePrefix("192.168.0.0/16"), Gateway: netip.MustParseAddr("192.168.1.1")}},
	}, {
		// #12.3: ptp deletes the connected route and routes the subnet
		// through the gateway, which is on-link by a host route.
		name: "ptp: subnet via the gateway, gateway on-link, address /32",
		addr: netip.MustParsePrefix("10.244.2.2/24"),
		routes: []cache.Route{
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.2.1")},
			{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gateway: netip.MustParseAddr("10.244.2.1"), Src: netip.MustParseAddr("10.244.2.2")},
			{Dst: netip.MustParsePrefix("10.244.2.1/32"), Src: netip.MustParseAddr("10.244.2.2")},
		},
		wantIP: netip.MustParsePrefix("10.244.2.2/32"), wantGW: netip.MustParseAddr("10.244.2.1"),
		wantRts: []cache.Route{
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.2.1")},
			{Dst: netip.MustParsePrefix("10.244.2.0/24"), Gateway: netip.MustParseAddr("10.244.2.1")},
			{Dst: netip.MustParsePrefix("10.244.2.1/32")},
		},
	}, {
		name: "Calico: /32 with an on-link link-local gateway",
		addr: netip.MustParsePrefix("10.1.2.3/32"),
		routes: []cache.Route{
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("169.254.1.1")},
			{Dst: netip.MustParsePrefix("169.254.1.1/32")},
		},
		wantIP: netip.MustParsePrefix("10.1.2.3/32"), wantGW: netip.MustParseAddr("169.254.1.1"),
		wantRts: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("169.254.1.1")}, {Dst: netip.MustParsePrefix("169.254.1.1/32")}},
	}, {
		name: "IPv6 routes and duplicates by metric are left out",
		addr: netip.MustParsePrefix("10.244.1.7/24"),
		routes: []cache.Route{
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1"), Metric: 100},
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1"), Metric: 200},
			{Dst: netip.MustParsePrefix("10.244.1.0/24"), Src: netip.MustParseAddr("10.244.1.7"), Kernel: true},
			{Dst: netip.MustParsePrefix("::/0"), Gateway: netip.MustParseAddr("fd00::1")},
		},
		wantIP: netip.MustParsePrefix("10.244.1.7/24"), wantGW: netip.MustParseAddr("10.244.1.1"),
		wantRts: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			link := &cache.Link{Name: "net1", Type: "veth", MAC: cache.MustParseMAC("0a:58:0a:f4:01:07"), MTU: 1440,
				Addresses: []netip.Prefix{tc.addr}, Routes: tc.routes}
			rec, err := Binding{}.Plan(planInput(t), link)
			require.NoError(t, err)
			require.False(t, rec.IPAMDisabled)
			require.Equal(t, tc.wantIP, rec.IPv4)
			require.Equal(t, tc.wantGW, rec.Gateway)
			require.Equal(t, tc.wantRts, rec.Routes)
		})
	}
}

// TestPlanVMMAC: the VM's MAC is the spec's macAddress, else the one
// status.interfaces reports for the interface, else the pod link's
// (KubeVirt v1.9.0's order: after a migration the new pod's link has
// another MAC, and the VM keeps its own, KubeVirt's bug #16696), with or
// without IPAM; a status MAC that does not parse is refused naming its
// path.
func TestPlanVMMAC(t *testing.T) {
	const podMAC, specMAC, statusMAC = "0a:58:0a:f4:01:07", "02:00:00:00:00:aa", "02:00:00:00:00:bb"
	for _, tc := range []struct {
		name    string
		spec    string
		status  []api.InterfaceStatus
		ipam    bool
		want    string
		wantErr string
	}{
		{name: "pod link", ipam: true, want: podMAC},
		{name: "spec", spec: specMAC, status: []api.InterfaceStatus{{Name: "blue", MAC: statusMAC}}, ipam: true, want: specMAC},
		{name: "status", status: []api.InterfaceStatus{{Name: "red", MAC: "02:00:00:00:00:cc"}, {Name: "blue", MAC: "02:00:00:00:00:BB"}}, ipam: true, want: statusMAC},
		{name: "status without IPAM", status: []api.InterfaceStatus{{Name: "blue", MAC: statusMAC}}, want: statusMAC},
		{name: "status of another interface", status: []api.InterfaceStatus{{Name: "red", MAC: statusMAC}}, ipam: true, want: podMAC},
		{name: "guest-only status entry", status: []api.InterfaceStatus{{MAC: statusMAC, InterfaceName: "eth1"}}, ipam: true, want: podMAC},
		{name: "status entry without MAC", status: []api.InterfaceStatus{{Name: "blue", InfoSource: "multus-status"}}, ipam: true, want: podMAC},
		{name: "bad status MAC", status: []api.InterfaceStatus{{Name: "red"}, {Name: "blue", MAC: "02:00:00:00:00"}}, ipam: true,
			wantErr: `status.interfaces[1].mac: not a 6-byte MAC address (value "02:00:00:00:00")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := planInput(t)
			in.Pair.Interface.MacAddress = tc.spec
			in.VMI.Status.Interfaces = tc.status
			link := &cache.Link{Name: "net1", Type: "veth", MAC: cache.MustParseMAC(podMAC), MTU: 1440}
			if tc.ipam {
				link.Addresses = []netip.Prefix{netip.MustParsePrefix("10.244.1.7/24")}
				link.Routes = []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}, {Dst: netip.MustParsePrefix("10.244.1.0/24"), Src: netip.MustParseAddr("10.244.1.7"), Kernel: true}}
			}
			rec, err := Binding{}.Plan(in, link)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, recText(rec.MAC))
			require.Equal(t, !tc.ipam, rec.IPAMDisabled)
		})
	}
}

// TestPlanIPv6: the VM's IPv6 is the pod link's first global address as a
// /128 (DHCPv6 IA_NA); the default route's gateway and the router's
// link-local address (from the discovery) are kept; the prefix is on-link
// only when the pod had its connected route (bridge plugin), not on ptp;
// an IPv6-only pod link is IPAM, not layer 2.
func TestPlanIPv6(t *testing.T) {
	const ll = "fe80::b8:a3ff:fe15:14bf"
	for _, tc := range []struct {
		name                    string
		link                    cache.Link
		wantV4, wantV6, wantGW6 string
		wantRouter, wantOnLink  string
	}{{
		name: "bridge plugin, dual-stack",
		link: cache.Link{Addresses: []netip.Prefix{netip.MustParsePrefix("10.244.3.2/24"), netip.MustParsePrefix("fd00:10:244:3::2/64")}, RouterIPv6: netip.MustParseAddr(ll), Routes: []cache.Route{
			{Dst: netip.MustParsePrefix("10.244.3.0/24"), Src: netip.MustParseAddr("10.244.3.2"), Kernel: true},
			{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.3.1")},
			{Dst: netip.MustParsePrefix("fd00:10:244:3::/64"), Kernel: true},
			{Dst: netip.MustParsePrefix("fe80::/64"), Kernel: true},
			{Dst: netip.MustParsePrefix("::/0"), Gateway: netip.MustParseAddr("fd00:10:244:3::1")},
		}},
		wantV4: "10.244.3.2/24", wantV6: "fd00:10:244:3::2/128", wantGW6: "fd00:10:244:3::1", wantRouter: ll, wantOnLink: "fd00:10:244:3::/64",
	}, {
		name: "ptp, IPv6 only",
		link: cache.Link{Addresses: []netip.Prefix{netip.MustParsePrefix("fd00:10:244:4::2/64")}, RouterIPv6: netip.MustParseAddr(ll), Routes: []cache.Route{
			{Dst: netip.MustParsePrefix("fd00:10:244:4::1/128"), Src: netip.MustParseAddr("fd00:10:244:4::2")},
			{Dst: netip.MustParsePrefix("fd00:10:244:4::/64"), Gateway: netip.MustParseAddr("fd00:10:244:4::1"), Src: netip.MustParseAddr("fd00:10:244:4::2")},
			{Dst: netip.MustParsePrefix("fe80::/64"), Kernel: true},
			{Dst: netip.MustParsePrefix("::/0"), Gateway: netip.MustParseAddr("fd00:10:244:4::1")},
		}},
		wantV6: "fd00:10:244:4::2/128", wantGW6: "fd00:10:244:4::1", wantRouter: ll,
	}, {
		name:   "no IPv6 default route: no router",
		link:   cache.Link{Addresses: []netip.Prefix{netip.MustParsePrefix("fd00:10:244:4::2/64")}, RouterIPv6: netip.MustParseAddr(ll), Routes: []cache.Route{{Dst: netip.MustParsePrefix("fd00:10:244:4::/64"), Kernel: true}}},
		wantV6: "fd00:10:244:4::2/128", wantOnLink: "fd00:10:244:4::/64",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.link.Name, tc.link.Type, tc.link.MAC, tc.link.MTU = "net1", "veth", cache.MustParseMAC("02:00:00:00:00:07"), 1450
			rec, err := Binding{}.Plan(planInput(t), &tc.link)
			require.NoError(t, err)
			require.False(t, rec.IPAMDisabled)
			require.Equal(t, "net1-nic", rec.NIC)
			require.Equal(t, tc.wantV4, recText(rec.IPv4))
			require.Equal(t, tc.wantV6, recText(rec.IPv6))
			require.Equal(t, tc.wantGW6, recText(rec.GatewayIPv6))
			require.Equal(t, tc.wantRouter, recText(rec.RouterIPv6))
			require.Equal(t, tc.wantOnLink, recText(rec.OnLinkIPv6))
			if tc.wantV4 == "" {
				require.Empty(t, rec.ServerIPv4, "no DHCPv4 server without an IPv4 address")
			}
		})
	}
}

// TestEUI64LinkLocal: the link-local address Linux derives from a MAC
// (cni0's, as the kernel VM showed it).
func TestEUI64LinkLocal(t *testing.T) {
	mac, err := net.ParseMAC("02:b8:a3:15:14:bf")
	require.NoError(t, err)
	ll, ok := eui64LinkLocal(mac)
	require.True(t, ok)
	require.Equal(t, "fe80::b8:a3ff:fe15:14bf", ll.String())
	_, ok = eui64LinkLocal(net.HardwareAddr{1, 2, 3})
	require.False(t, ok)
}

// recText is a record value as the record's JSON writes it ("" when unset).
func recText(v encoding.TextMarshaler) string {
	b, err := v.MarshalText()
	if err != nil {
		panic(err)
	}
	return string(b)
}
