package netdrivertest

import (
	"net/netip"

	"github.com/virtnet/virtnet/netdriver"
)

// SampleNAT4 is the masquerade binding's IPv4 spec for the default VM CIDR.
func SampleNAT4(ports ...netdriver.NATPort) netdriver.NAT {
	return netdriver.NAT{
		Family: netdriver.IPv4, PodInterface: "eth0", Bridge: "k6t-eth0",
		VM: netip.MustParseAddr("10.0.2.2"), Gateway: netip.MustParseAddr("10.0.2.1"),
		Ports: ports, MigrationPorts: []uint16{49152, 49153},
	}
}

// SampleNAT6 is the IPv6 counterpart of SampleNAT4.
func SampleNAT6(ports ...netdriver.NATPort) netdriver.NAT {
	return netdriver.NAT{
		Family: netdriver.IPv6, PodInterface: "eth0", Bridge: "k6t-eth0",
		VM: netip.MustParseAddr("fd10:0:2::2"), Gateway: netip.MustParseAddr("fd10:0:2::1"),
		Ports: ports, MigrationPorts: []uint16{49152, 49153},
	}
}

// SampleIstio4 is SampleNAT4 with Istio's sidecar in a pod whose address
// is 10.244.1.7; SampleIstio6 is its IPv6 counterpart (no passthrough
// source, no pod address: KubeVirt adds both for IPv4 only).
func SampleIstio4(ports ...netdriver.NATPort) netdriver.NAT {
	n := SampleNAT4(ports...)
	n.Proxy = &netdriver.NATProxy{Source: netdriver.IstioPassthroughSource(), PodAddress: netip.MustParseAddr("10.244.1.7"),
		ReservedPorts: netdriver.IstioReservedPorts(), NonProxiedPorts: netdriver.IstioNonProxiedPorts()}
	return n
}

// SampleIstio6 is the IPv6 counterpart of SampleIstio4.
func SampleIstio6(ports ...netdriver.NATPort) netdriver.NAT {
	n := SampleNAT6(ports...)
	n.Proxy = &netdriver.NATProxy{ReservedPorts: netdriver.IstioReservedPorts(), NonProxiedPorts: netdriver.IstioNonProxiedPorts()}
	return n
}

// NATListingCase is a NAT spec and the listing a driver gives for it.
type NATListingCase struct {
	Name string
	NAT  netdriver.NAT
	// Want is the listing, one rule a line ([netdriver.NATListing]).
	Want []string
}

// NATListingCases returns the expected listings (a new slice on each
// call), for tests of a [netdriver.Driver]: the kernel driver's test checks
// that the kernel lists the same lines after ApplyNAT.
func NATListingCases() []NATListingCase {
	return []NATListingCase{
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
			NAT:  SampleNAT4(netdriver.NATPort{Protocol: "tcp", Port: 8080}, netdriver.NATPort{Protocol: "UDP", Port: 53}),
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
			NAT: SampleNAT4(netdriver.NATPort{Protocol: "tcp", Port: 8080}, netdriver.NATPort{Protocol: "udp", Port: 53},
				netdriver.NATPort{Protocol: "tcp", Port: 443}, netdriver.NATPort{Protocol: "udp", Port: 5353}, netdriver.NATPort{Protocol: "tcp", Port: 443}),
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
				`output: ip saddr 127.0.0.1 tcp dport { 15000-15001, 15004, 15006, 15008-15009, 15020-15021, 15053, 15090 } counter return`,
				`output: ip daddr { 10.244.1.7, 127.0.0.1 } counter dnat to 10.0.2.2`,
				`postrouting: ip saddr 10.0.2.2 counter masquerade`,
				`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
				`KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to 10.0.2.2`,
				`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 49152-49153 } counter return`,
				`KUBEVIRT_POSTINBOUND: ip saddr 127.0.0.1 tcp dport { 15000-15001, 15004, 15006, 15008-15009, 15020-15021, 15053, 15090 } counter return`,
				`KUBEVIRT_POSTINBOUND: ip saddr { 127.0.0.1, 127.0.0.6 } counter snat to 10.0.2.1`,
			},
		},
		{
			Name: "ipv4 istio with ports: only the non-proxied one is DNAT-ed inbound",
			NAT:  SampleIstio4(netdriver.NATPort{Protocol: "tcp", Port: 8080}, netdriver.NATPort{Protocol: "tcp", Port: 22}),
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
			NAT: func() netdriver.NAT {
				n := SampleIstio6()
				n.MigrationPorts = nil
				return n
			}(),
			Want: []string{
				`prerouting: iifname "eth0" counter jump KUBEVIRT_PREINBOUND`,
				`output: ip6 saddr ::1 tcp dport { 15000-15001, 15004, 15006, 15008-15009, 15020-15021, 15053, 15090 } counter return`,
				`output: ip6 daddr ::1 counter dnat to fd10:0:2::2`,
				`postrouting: ip6 saddr fd10:0:2::2 counter masquerade`,
				`postrouting: oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND`,
				`KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to fd10:0:2::2`,
				`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 tcp dport { 15000-15001, 15004, 15006, 15008-15009, 15020-15021, 15053, 15090 } counter return`,
				`KUBEVIRT_POSTINBOUND: ip6 saddr ::1 counter snat to fd10:0:2::1`,
			},
		},
		{
			Name: "ipv6 tcp port",
			NAT:  SampleNAT6(netdriver.NATPort{Protocol: "tcp", Port: 8080}),
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
			NAT: func() netdriver.NAT {
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
}
