package netdriver_test

import (
	"net/netip"
	"testing"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"
)

func TestNATListing(t *testing.T) {
	for _, tc := range netdrivertest.NATListingCases() {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := netdriver.NATListing(tc.NAT)
			require.NoError(t, err)
			require.Equal(t, tc.Want, got)
		})
	}
}

func TestNATRulesInvalid(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*netdriver.NAT)
		want   string
	}{
		{"family", func(n *netdriver.NAT) { n.Family = 5 }, `field Family: bad value "5"`},
		{"no pod interface", func(n *netdriver.NAT) { n.PodInterface = "" }, `field PodInterface: bad value ""`},
		{"long bridge", func(n *netdriver.NAT) { n.Bridge = "k6t-0123456789ab" }, `field Bridge: bad value "k6t-0123456789ab"`},
		{"vm of other family", func(n *netdriver.NAT) { n.VM = netip.MustParseAddr("fd10:0:2::2") }, `field VM: bad value "fd10:0:2::2"`},
		{"no gateway", func(n *netdriver.NAT) { n.Gateway = netip.Addr{} }, `field Gateway: bad value "invalid IP"`},
		{"sctp", func(n *netdriver.NAT) { n.Ports = []netdriver.NATPort{{Protocol: "sctp", Port: 1}} }, `field Ports[0].Protocol: bad value "sctp"`},
		{"port 0", func(n *netdriver.NAT) { n.Ports = []netdriver.NATPort{{Protocol: "tcp"}} }, `field Ports[0].Port: bad value "0"`},
		{"migration port 0", func(n *netdriver.NAT) { n.MigrationPorts = []uint16{0} }, `field MigrationPorts[0]: bad value "0"`},
		{"proxy source of other family", func(n *netdriver.NAT) { n.Proxy = &netdriver.NATProxy{Source: netip.MustParseAddr("::1")} }, `field Proxy.Source: bad value "::1"`},
		{"proxy pod address of other family", func(n *netdriver.NAT) { n.Proxy = &netdriver.NATProxy{PodAddress: netip.MustParseAddr("fd00::7")} }, `field Proxy.PodAddress: bad value "fd00::7"`},
		{"proxy reserved port 0", func(n *netdriver.NAT) { n.Proxy = &netdriver.NATProxy{ReservedPorts: []uint16{15000, 0}} }, `field Proxy.ReservedPorts[1]: bad value "0"`},
		{"proxy non-proxied port 0", func(n *netdriver.NAT) { n.Proxy = &netdriver.NATProxy{NonProxiedPorts: []uint16{0}} }, `field Proxy.NonProxiedPorts[0]: bad value "0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nat := netdrivertest.SampleNAT4()
			tc.mutate(&nat)
			_, err := nat.Rules()
			require.ErrorIs(t, err, netdriver.ErrInvalidNAT)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNATProtocolDefaultsToTCP(t *testing.T) {
	got, err := netdriver.NATListing(netdrivertest.SampleNAT4(netdriver.NATPort{Port: 22}))
	require.NoError(t, err)
	require.Contains(t, got, `KUBEVIRT_PREINBOUND: tcp dport 22 counter dnat to 10.0.2.2`)
}
