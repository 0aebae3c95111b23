package netdriver

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// SampleNAT4 is the masquerade binding's IPv4 spec for the default VM CIDR.
func SampleNAT4(ports ...NATPort) NAT {
	return NAT{
		Family: IPv4, PodInterface: "eth0", Bridge: "k6t-eth0",
		VM: netip.MustParseAddr("10.0.2.2"), Gateway: netip.MustParseAddr("10.0.2.1"),
		Ports: ports, MigrationPorts: []uint16{49152, 49153},
	}
}

// SampleNAT6 is the IPv6 counterpart of SampleNAT4.
func SampleNAT6(ports ...NATPort) NAT {
	return NAT{
		Family: IPv6, PodInterface: "eth0", Bridge: "k6t-eth0",
		VM: netip.MustParseAddr("fd10:0:2::2"), Gateway: netip.MustParseAddr("fd10:0:2::1"),
		Ports: ports, MigrationPorts: []uint16{49152, 49153},
	}
}

// SampleIstio4 is SampleNAT4 with Istio's sidecar in a pod whose address
// is 10.244.1.7; SampleIstio6 is its IPv6 counterpart (no passthrough
// source, no pod address: KubeVirt adds both for IPv4 only).
func SampleIstio4(ports ...NATPort) NAT {
	n := SampleNAT4(ports...)
	n.Proxy = &NATProxy{Source: IstioPassthroughSource, PodAddress: netip.MustParseAddr("10.244.1.7"),
		ReservedPorts: IstioReservedPorts(), NonProxiedPorts: IstioNonProxiedPorts()}
	return n
}

// SampleIstio6 is the IPv6 counterpart of SampleIstio4.
func SampleIstio6(ports ...NATPort) NAT {
	n := SampleNAT6(ports...)
	n.Proxy = &NATProxy{ReservedPorts: IstioReservedPorts(), NonProxiedPorts: IstioNonProxiedPorts()}
	return n
}

// NATListingCases are the expected listings, exported for the kernel test
// in nat_linux_test.go (package netdriver_test), which checks that the
// kernel gives back the same lines.
var NATListingCases = []struct {
	Name string
	NAT  NAT
	Want []string
}{
	{
		Name: "ipv4 no ports",
		NAT:  SampleNAT4(),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`output: ip daddr 127.0.0.1 counter dnat to 10.0.2.2`,
			`postrouting: ip saddr 10.0.2.2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: counter dnat to 10.0.2.2`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 counter snat to 10.0.2.1`,
		},
	},
	{
		Name: "ipv4 tcp and udp ports",
		NAT:  SampleNAT4(NATPort{Protocol: "tcp", Port: 8080}, NATPort{Protocol: "UDP", Port: 53}),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`output: ip daddr 127.0.0.1 tcp dport 8080 counter dnat to 10.0.2.2`,
			`output: ip daddr 127.0.0.1 udp dport 53 counter dnat to 10.0.2.2`,
			`postrouting: ip saddr 10.0.2.2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport 8080 counter dnat to 10.0.2.2`,
			`KUBEVIRT_PREINBOUND: udp dport 53 counter dnat to 10.0.2.2`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport 8080 counter snat to 10.0.2.1`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 udp dport 53 counter snat to 10.0.2.1`,
		},
	},
	{
		Name: "ipv4 ports of a protocol share one rule per chain, sorted, duplicates dropped",
		NAT: SampleNAT4(NATPort{Protocol: "tcp", Port: 8080}, NATPort{Protocol: "udp", Port: 53},
			NATPort{Protocol: "tcp", Port: 443}, NATPort{Protocol: "udp", Port: 5353}, NATPort{Protocol: "tcp", Port: 443}),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`output: ip daddr 127.0.0.1 tcp dport { 443, 8080 } counter dnat to 10.0.2.2`,
			`output: ip daddr 127.0.0.1 udp dport { 53, 5353 } counter dnat to 10.0.2.2`,
			`postrouting: ip saddr 10.0.2.2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport { 443, 8080 } counter dnat to 10.0.2.2`,
			`KUBEVIRT_PREINBOUND: udp dport { 53, 5353 } counter dnat to 10.0.2.2`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 443, 8080 } counter snat to 10.0.2.1`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 udp dport { 53, 5353 } counter snat to 10.0.2.1`,
		},
	},
	{
		Name: "ipv4 istio no ports",
		NAT:  SampleIstio4(),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`output: ip saddr 127.0.0.1 tcp dport { 15000-15001, 15006, 15008, 15020-15021, 15090 } counter return`,
			`output: ip daddr { 10.244.1.7, 127.0.0.1 } counter dnat to 10.0.2.2`,
			`postrouting: ip saddr 10.0.2.2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to 10.0.2.2`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 15000-15001, 15006, 15008, 15020-15021, 15090 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr { 127.0.0.1, 127.0.0.6 } counter snat to 10.0.2.1`,
		},
	},
	{
		Name: "ipv4 istio with ports: only the non-proxied one is DNAT-ed inbound",
		NAT:  SampleIstio4(NATPort{Protocol: "tcp", Port: 8080}, NATPort{Protocol: "tcp", Port: 22}),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`output: ip daddr { 10.244.1.7, 127.0.0.1 } tcp dport { 22, 8080 } counter dnat to 10.0.2.2`,
			`postrouting: ip saddr 10.0.2.2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to 10.0.2.2`,
			`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip saddr { 127.0.0.1, 127.0.0.6 } tcp dport { 22, 8080 } counter snat to 10.0.2.1`,
		},
	},
	{
		Name: "ipv6 istio no ports, unix migration",
		NAT: func() NAT {
			n := SampleIstio6()
			n.MigrationPorts = nil
			return n
		}(),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip6 saddr ::1 tcp dport { 15000-15001, 15006, 15008, 15020-15021, 15090 } counter return`,
			`output: ip6 daddr ::1 counter dnat to fd10:0:2::2`,
			`postrouting: ip6 saddr fd10:0:2::2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to fd10:0:2::2`,
			`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 tcp dport { 15000-15001, 15006, 15008, 15020-15021, 15090 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 counter snat to fd10:0:2::1`,
		},
	},
	{
		Name: "ipv6 tcp port",
		NAT:  SampleNAT6(NATPort{Protocol: "tcp", Port: 8080}),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip6 saddr ::1 tcp dport { 49152-49153 } counter return`,
			`output: ip6 daddr ::1 tcp dport 8080 counter dnat to fd10:0:2::2`,
			`postrouting: ip6 saddr fd10:0:2::2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: tcp dport 8080 counter dnat to fd10:0:2::2`,
			`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 tcp dport { 49152-49153 } counter return`,
			`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 tcp dport 8080 counter snat to fd10:0:2::1`,
		},
	},
	{
		Name: "ipv6 no ports, unix migration (no return rules)",
		NAT: func() NAT {
			n := SampleNAT6()
			n.MigrationPorts = nil
			return n
		}(),
		Want: []string{
			`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
			`output: ip6 daddr ::1 counter dnat to fd10:0:2::2`,
			`postrouting: ip6 saddr fd10:0:2::2 counter masquerade`,
			`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
			`KUBEVIRT_PREINBOUND: counter dnat to fd10:0:2::2`,
			`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 counter snat to fd10:0:2::1`,
		},
	},
}

func TestNATListing(t *testing.T) {
	for _, tc := range NATListingCases {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := natListing(tc.NAT)
			require.NoError(t, err)
			require.Equal(t, tc.Want, got)
		})
	}
}

func TestNATRulesInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*NAT)
		want   string
	}{
		{"family", func(n *NAT) { n.Family = 5 }, `field Family: bad value "5"`},
		{"no pod interface", func(n *NAT) { n.PodInterface = "" }, `field PodInterface: bad value ""`},
		{"long bridge", func(n *NAT) { n.Bridge = "k6t-0123456789ab" }, `field Bridge: bad value "k6t-0123456789ab"`},
		{"vm of other family", func(n *NAT) { n.VM = netip.MustParseAddr("fd10:0:2::2") }, `field VM: bad value "fd10:0:2::2"`},
		{"no gateway", func(n *NAT) { n.Gateway = netip.Addr{} }, `field Gateway: bad value "invalid IP"`},
		{"sctp", func(n *NAT) { n.Ports = []NATPort{{Protocol: "sctp", Port: 1}} }, `field Ports[0].Protocol: bad value "sctp"`},
		{"port 0", func(n *NAT) { n.Ports = []NATPort{{Protocol: "tcp"}} }, `field Ports[0].Port: bad value "0"`},
		{"migration port 0", func(n *NAT) { n.MigrationPorts = []uint16{0} }, `field MigrationPorts[0]: bad value "0"`},
		{"proxy source of other family", func(n *NAT) { n.Proxy = &NATProxy{Source: netip.MustParseAddr("::1")} }, `field Proxy.Source: bad value "::1"`},
		{"proxy pod address of other family", func(n *NAT) { n.Proxy = &NATProxy{PodAddress: netip.MustParseAddr("fd00::7")} }, `field Proxy.PodAddress: bad value "fd00::7"`},
		{"proxy reserved port 0", func(n *NAT) { n.Proxy = &NATProxy{ReservedPorts: []uint16{15000, 0}} }, `field Proxy.ReservedPorts[1]: bad value "0"`},
		{"proxy non-proxied port 0", func(n *NAT) { n.Proxy = &NATProxy{NonProxiedPorts: []uint16{0}} }, `field Proxy.NonProxiedPorts[0]: bad value "0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nat := SampleNAT4()
			tc.mutate(&nat)
			_, err := natRules(nat)
			require.ErrorIs(t, err, ErrInvalidNAT)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNATProtocolDefaultsToTCP(t *testing.T) {
	got, err := natListing(SampleNAT4(NATPort{Port: 22}))
	require.NoError(t, err)
	require.Contains(t, got, `KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to 10.0.2.2`)
}
