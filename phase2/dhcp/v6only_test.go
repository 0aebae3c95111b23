package dhcp

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIPv6OnlyMasquerade: a single-stack IPv6 pod's masquerade record has
// no IPv4 address; the server then serves DHCPv6 and router
// advertisements only; so does a bridge record of an IPv6-only pod (its
// /128 and its router's link-local address), on a shared bridge. A bridge
// record with neither address has nothing to serve.
func TestIPv6OnlyMasquerade(t *testing.T) {
	rec := masqRecord()
	rec.IPv4, rec.Gateway, rec.ServerIPv4 = netip.Prefix{}, netip.Addr{}, netip.Addr{}
	rec.IPv6, rec.GatewayIPv6, rec.ServerIPv6 = netip.MustParsePrefix("fd10:0:2::2/120"), netip.MustParseAddr("fd10:0:2::1"), netip.MustParseAddr("fd10:0:2::1")
	c, err := NewConfig(nil, nil, rec, nil)
	require.NoError(t, err)
	require.False(t, c.HasIPv4())
	require.NotNil(t, c.IPv6)
	require.Equal(t, "fd10:0:2::2/120", c.IPv6.Address.String())

	require.False(t, c.IPv6.Shared, "masquerade's bridge is the VM's router")

	br := bridgeRecord()
	br.IPv4, br.ServerIPv4 = netip.Prefix{}, netip.Addr{}
	br.IPv6, br.GatewayIPv6, br.RouterIPv6 = netip.MustParsePrefix("fd00:10:244:4::2/128"), netip.MustParseAddr("fd00:10:244:4::1"), netip.MustParseAddr("fe80::1c14:36ff:fe56:a709")
	c, err = NewConfig(nil, nil, br, nil)
	require.NoError(t, err)
	require.False(t, c.HasIPv4())
	require.True(t, c.IPv6.Shared)
	require.Equal(t, "fe80::1c14:36ff:fe56:a709", c.IPv6.Router.String())
	require.False(t, c.IPv6.OnLink.IsValid())

	br.IPv6 = netip.Prefix{}
	_, err = NewConfig(nil, nil, br, nil)
	require.ErrorIs(t, err, ErrIPAMDisabled)
}
