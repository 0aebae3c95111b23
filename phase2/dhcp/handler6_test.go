package dhcp

import (
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/mdlayher/ndp"
	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/cache"
)

func TestHandler6(t *testing.T) {
	c, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(t, err)
	brMAC := net.HardwareAddr{2, 0, 0, 0, 0, 0}
	h := NewHandler6(c, brMAC, slog.New(slog.DiscardHandler))
	clientMAC := net.HardwareAddr{0x52, 0x54, 0, 1, 2, 3}
	iaid := [4]byte{0, 0, 0, 7}

	sol, err := dhcpv6.NewSolicit(clientMAC, dhcpv6.WithIAID(iaid))
	require.NoError(t, err)
	sol.Options.Del(dhcpv6.OptionRapidCommit)
	rapid, err := dhcpv6.NewSolicit(clientMAC, dhcpv6.WithIAID(iaid), dhcpv6.WithRapidCommit)
	require.NoError(t, err)
	peer := netip.MustParseAddr("fe80::5054:ff:fe01:203")
	adv := h.Handle(peer, sol).(*dhcpv6.Message)
	req, err := dhcpv6.NewRequestFromAdvertise(adv)
	require.NoError(t, err)
	other, err := dhcpv6.NewRequestFromAdvertise(adv)
	require.NoError(t, err)
	other.UpdateOption(dhcpv6.OptServerID(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: net.HardwareAddr{2, 9, 9, 9, 9, 9}}))
	noCID, err := dhcpv6.NewSolicit(clientMAC)
	require.NoError(t, err)
	noCID.Options.Del(dhcpv6.OptionClientID)
	relay, err := dhcpv6.EncapsulateRelay(sol, dhcpv6.MessageTypeRelayForward, net.IPv6loopback, net.IPv6loopback)
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		msg    dhcpv6.DHCPv6
		want   dhcpv6.MessageType
		noIANA bool
	}{
		{name: "solicit", msg: sol, want: dhcpv6.MessageTypeAdvertise},
		{name: "solicit rapid commit", msg: rapid, want: dhcpv6.MessageTypeReply},
		{name: "request", msg: req, want: dhcpv6.MessageTypeReply},
		{name: "request to other server", msg: other},
		{name: "no client id", msg: noCID},
		{name: "relayed", msg: relay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Handle(peer, tc.msg)
			if tc.want == 0 {
				require.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			m := r.(*dhcpv6.Message)
			require.Equal(t, tc.want, m.MessageType)
			require.True(t, m.Options.ServerID().Equal(&dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: brMAC}))
			ia := m.Options.OneIANA()
			require.NotNil(t, ia)
			require.Equal(t, iaid, ia.IaId)
			addr := ia.Options.OneAddress()
			require.NotNil(t, addr)
			require.Equal(t, "fd10:0:2::2", addr.IPv6Addr.String())
			require.Equal(t, InfiniteLease, addr.ValidLifetime)
			// No IPv6 nameserver in the (empty) resolv.conf: no option
			// 23 is invented; the default search domain is sent.
			require.Nil(t, m.Options.GetOne(dhcpv6.OptionDNSRecursiveNameServer))
			require.Equal(t, []string{"cluster.local"}, m.Options.DomainSearchList().Labels)
			_, err := dhcpv6.FromBytes(m.ToBytes())
			require.NoError(t, err)
		})
	}
}

func TestRouterAdvertisement(t *testing.T) {
	c, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(t, err)
	ra := RouterAdvertisement(c, net.HardwareAddr{2, 0, 0, 0, 0, 0})
	require.True(t, ra.ManagedConfiguration)
	require.NotZero(t, ra.RouterLifetime)
	// Source link-layer address, MTU, prefix, and the default search
	// domain (DNSSL); no RDNSS: an empty resolv.conf has no IPv6
	// nameserver.
	require.Len(t, ra.Options, 4)

	c, err = NewConfig(testVMI(), nil, masqRecord(), []byte(podResolvConf))
	require.NoError(t, err)
	ra = RouterAdvertisement(c, net.HardwareAddr{2, 0, 0, 0, 0, 0})
	require.Len(t, ra.Options, 5)
	require.Equal(t, &ndp.RecursiveDNSServer{Lifetime: routerLifetime, Servers: []netip.Addr{netip.MustParseAddr("fd00::10")}}, ra.Options[3])
	require.Equal(t, &ndp.DNSSearchList{Lifetime: routerLifetime,
		DomainNames: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}}, ra.Options[4])
	b, err := ndp.MarshalMessage(ra)
	require.NoError(t, err)
	_, err = ndp.ParseMessage(b)
	require.NoError(t, err)
}

// TestHandler6Filter: with the VM's MAC known, a client is answered only
// when its DUID, its EUI-64 link-local source address or its neighbour
// entry shows that MAC; the reply carries the pod's IPv6 nameservers and
// search list (options 23 and 24).
func TestHandler6Filter(t *testing.T) {
	vm := net.HardwareAddr{0x52, 0x54, 0, 0x12, 0x34, 0x56}
	other := net.HardwareAddr{0x52, 0x54, 0, 0x99, 0x99, 0x99}
	rec := masqRecord()
	rec.MAC = cache.MustParseMAC(vm.String())
	c, err := NewConfig(testVMI(), nil, rec, []byte(podResolvConf))
	require.NoError(t, err)
	vmLL := netip.MustParseAddr("fe80::5054:ff:fe12:3456")     // EUI-64 of vm
	otherLL := netip.MustParseAddr("fe80::5054:ff:fe99:9999")  // EUI-64 of other
	privLL := netip.MustParseAddr("fe80::1c2d:3e4f:5a6b:7c8d") // stable privacy
	llt := func(mac net.HardwareAddr) dhcpv6.DUID {
		return &dhcpv6.DUIDLLT{HWType: iana.HWTypeEthernet, Time: 1, LinkLayerAddr: mac}
	}
	ll := func(mac net.HardwareAddr) dhcpv6.DUID {
		return &dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: mac}
	}
	uuid := &dhcpv6.DUIDUUID{UUID: [16]byte{1, 2, 3}}
	en := &dhcpv6.DUIDEN{EnterpriseNumber: 43793, EnterpriseIdentifier: []byte{1, 2, 3, 4}}
	for _, tc := range []struct {
		name   string
		duid   dhcpv6.DUID
		peer   netip.Addr
		neigh  net.HardwareAddr
		answer bool
	}{
		{"DUID-LLT of the VM", llt(vm), privLL, nil, true},
		{"DUID-LL of the VM", ll(vm), privLL, nil, true},
		{"DUID-LLT of another NIC, EUI-64 source of the VM", llt(other), vmLL, nil, true},
		{"DUID-EN, EUI-64 source of the VM", en, vmLL, nil, true},
		{"DUID-UUID, neighbour entry of the VM", uuid, privLL, vm, true},
		{"foreign DUID-LLT and source", llt(other), otherLL, nil, false},
		{"foreign DUID-LL and source", ll(other), otherLL, other, false},
		{"DUID-UUID, foreign neighbour entry", uuid, privLL, other, false},
		{"DUID-UUID, no neighbour entry", uuid, privLL, nil, false},
		{"DUID-EN, foreign EUI-64 source", en, otherLL, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			h := NewHandler6(c, net.HardwareAddr{2, 0, 0, 0, 0, 1}, slog.New(slog.NewTextHandler(&logs, nil)))
			h.SetNeighbors(func(a netip.Addr) net.HardwareAddr {
				if a == tc.peer {
					return tc.neigh
				}
				return nil
			})
			sol, err := dhcpv6.NewSolicit(other, dhcpv6.WithClientID(tc.duid))
			require.NoError(t, err)
			sol.Options.Del(dhcpv6.OptionRapidCommit)
			r := h.Handle(tc.peer, sol)
			if !tc.answer {
				require.Nil(t, r)
				require.Contains(t, logs.String(), "ignoring client that is not the VM")
				return
			}
			require.NotNil(t, r)
			m := r.(*dhcpv6.Message)
			require.Equal(t, dhcpv6.MessageTypeAdvertise, m.MessageType)
			require.Equal(t, []net.IP{net.ParseIP("fd00::10")}, m.Options.DNS())
			require.Equal(t, []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, m.Options.DomainSearchList().Labels)
		})
	}
}

// FuzzHandle6 is FuzzHandle for DHCPv6.
func FuzzHandle6(f *testing.F) {
	c, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(f, err)
	h := NewHandler6(c, net.HardwareAddr{2, 0, 0, 0, 0, 0}, slog.New(slog.DiscardHandler))
	sol, err := dhcpv6.NewSolicit(net.HardwareAddr{2, 1, 2, 3, 4, 5})
	require.NoError(f, err)
	f.Add(sol.ToBytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := dhcpv6.FromBytes(b)
		if err != nil {
			return
		}
		if r := h.Handle(netip.MustParseAddr("fe80::1"), m); r != nil {
			if _, err := dhcpv6.FromBytes(r.ToBytes()); err != nil {
				t.Fatalf("reply does not parse: %v", err)
			}
		}
	})
}
