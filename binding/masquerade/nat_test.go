package masquerade_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
)

// TestPlanNAT covers issue 12 items 10 and 11: the migration-port returns
// follow status.migrationTransport, and the Istio annotation selects
// KubeVirt v0.53's Istio rules (the traffic they make is tested in
// netdriver/kernel's TestNATIstioTraffic).
func TestPlanNAT(t *testing.T) {
	manifest := func(extra string) string {
		return `kind: VirtualMachineInstance
metadata:
  name: m
  uid: 5a1e0000-0000-4000-8000-000000000001
` + extra + `
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{port: 8080}, {port: 22}]}
  networks:
  - {name: default, pod: {}}
`
	}
	link := &cache.Link{Name: "eth0", Addresses: []netip.Prefix{netip.MustParsePrefix("10.244.1.7/24"), netip.MustParsePrefix("fd00::7/64")}}
	for _, tc := range []struct {
		name, extra string
		family      netdriver.Family
		want        *netdriver.NATProxy
		migration   bool
	}{
		{name: "tcp migration (no status): ports returned", family: netdriver.IPv4, migration: true},
		{name: "unix migration: no returns", extra: "status: {migrationTransport: Unix}", family: netdriver.IPv4},
		{name: "istio ipv4", extra: "  annotations: {sidecar.istio.io/inject: \"True\"}\nstatus: {migrationTransport: Unix}", family: netdriver.IPv4,
			want: &netdriver.NATProxy{Source: netip.MustParseAddr("127.0.0.6"), PodAddress: netip.MustParseAddr("10.244.1.7"),
				ReservedPorts: netdriver.IstioReservedPorts(), NonProxiedPorts: []uint16{22}}},
		{name: "istio ipv6: no passthrough source, no pod address", extra: "  annotations: {sidecar.istio.io/inject: \"true\"}", family: netdriver.IPv6,
			migration: true, want: &netdriver.NATProxy{ReservedPorts: netdriver.IstioReservedPorts(), NonProxiedPorts: []uint16{22}}},
		{name: "istio annotation false", extra: "  annotations: {sidecar.istio.io/inject: \"false\"}", family: netdriver.IPv4, migration: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi, err := api.Load([]byte(manifest(tc.extra)))
			require.NoError(t, err)
			pairs, err := api.Pairs(vmi)
			require.NoError(t, err)
			in := binding.Input{VMI: vmi, Pair: pairs[0], Names: binding.Names{Pod: "eth0"}}
			vm, gw := netip.MustParseAddr("10.0.2.2"), netip.MustParseAddr("10.0.2.1")
			if tc.family == netdriver.IPv6 {
				vm, gw = netip.MustParseAddr("fd10:0:2::2"), netip.MustParseAddr("fd10:0:2::1")
			}
			nat, err := masquerade.PlanNAT(in, link, tc.family, "k6t-eth0", vm, gw)
			require.NoError(t, err)
			require.Equal(t, tc.want, nat.Proxy)
			require.Equal(t, []netdriver.NATPort{{Protocol: "tcp", Port: 8080}, {Protocol: "tcp", Port: 22}}, nat.Ports)
			lines, err := netdriver.NATListing(nat)
			require.NoError(t, err)
			text := strings.Join(lines, "\n")
			if tc.migration {
				require.Equal(t, []uint16{49152, 49153}, nat.MigrationPorts)
				require.Contains(t, text, "tcp dport { 49152-49153 } counter return")
			} else {
				require.Empty(t, nat.MigrationPorts)
				require.NotContains(t, text, "return")
			}
		})
	}

	t.Run("istio without a pod IPv4 address is an error", func(t *testing.T) {
		vmi, err := api.Load([]byte(manifest("  annotations: {sidecar.istio.io/inject: \"true\"}")))
		require.NoError(t, err)
		pairs, err := api.Pairs(vmi)
		require.NoError(t, err)
		in := binding.Input{VMI: vmi, Pair: pairs[0], Names: binding.Names{Pod: "eth0"}}
		_, err = masquerade.PlanNAT(in, &cache.Link{Name: "eth0", Addresses: []netip.Prefix{netip.MustParsePrefix("fd00::7/64")}}, netdriver.IPv4,
			"k6t-eth0", netip.MustParseAddr("10.0.2.2"), netip.MustParseAddr("10.0.2.1"))
		require.ErrorIs(t, err, binding.ErrNoAddress)
	})
}

// TestPlanNATPortRanges: KubeVirt 1.x's portRanges become exactly those
// ports, one interval per range, as KubeVirt v1.9 writes them (the
// traffic is phase1's TestMasqueradePortRangesTraffic).
func TestPlanNATPortRanges(t *testing.T) {
	vmi, err := api.Load([]byte(`kind: VirtualMachineInstance
metadata: {name: m, uid: 5a1e0000-0000-4000-8000-000000000001}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, portRanges: [{protocol: TCP, start: 8000, end: 8010}, {protocol: UDP, start: 5000, end: 5001}, {protocol: TCP, start: 65535, end: 65535}]}
  networks: [{name: default, pod: {}}]
status: {migrationTransport: Unix}
`))
	require.NoError(t, err)
	pairs, err := api.Pairs(vmi)
	require.NoError(t, err)
	in := binding.Input{VMI: vmi, Pair: pairs[0], Names: binding.Names{Pod: "eth0"}}
	nat, err := masquerade.PlanNAT(in, &cache.Link{Name: "eth0"}, netdriver.IPv4, "k6t-eth0", netip.MustParseAddr("10.0.2.2"), netip.MustParseAddr("10.0.2.1"))
	require.NoError(t, err)
	require.Len(t, nat.Ports, 11+2+1)
	lines, err := netdriver.NATListing(nat)
	require.NoError(t, err)
	require.Equal(t, []string{
		"output: ip daddr 127.0.0.1 tcp dport { 8000-8010, 65535 } counter dnat to 10.0.2.2",
		"output: ip daddr 127.0.0.1 udp dport { 5000-5001 } counter dnat to 10.0.2.2",
		"postrouting: ip saddr 10.0.2.2 counter masquerade",
		"postrouting: oifname \"k6t-eth0\" counter jump KUBEVIRT_POSTINBOUND",
		"KUBEVIRT_PREINBOUND: tcp dport { 8000-8010, 65535 } counter dnat to 10.0.2.2",
		"KUBEVIRT_PREINBOUND: udp dport { 5000-5001 } counter dnat to 10.0.2.2",
		"KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 8000-8010, 65535 } counter snat to 10.0.2.1",
		"KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 udp dport { 5000-5001 } counter snat to 10.0.2.1",
	}, slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "prerouting") }))
}
