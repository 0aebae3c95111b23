package dhcp

import (
	"log/slog"
	"net"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/stretchr/testify/require"
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
	adv := h.Handle(sol).(*dhcpv6.Message)
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
			r := h.Handle(tc.msg)
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
	require.Len(t, ra.Options, 3)
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
		if r := h.Handle(m); r != nil {
			if _, err := dhcpv6.FromBytes(r.ToBytes()); err != nil {
				t.Fatalf("reply does not parse: %v", err)
			}
		}
	})
}
