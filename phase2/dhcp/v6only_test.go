package dhcp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIPv6OnlyMasquerade: a single-stack IPv6 pod's masquerade record has
// no IPv4 address; the server then serves DHCPv6 and router
// advertisements only. A bridge record without IPv4 has nothing to serve.
func TestIPv6OnlyMasquerade(t *testing.T) {
	rec := masqRecord()
	rec.IPv4, rec.Gateway, rec.ServerIPv4 = "", "", ""
	rec.IPv6, rec.GatewayIPv6, rec.ServerIPv6 = "fd10:0:2::2/120", "fd10:0:2::1", "fd10:0:2::1"
	c, err := NewConfig(nil, nil, rec, nil)
	require.NoError(t, err)
	require.False(t, c.HasIPv4())
	require.NotNil(t, c.IPv6)
	require.Equal(t, "fd10:0:2::2/120", c.IPv6.Address.String())

	br := bridgeRecord()
	br.IPv4, br.IPv6 = "", "fd00::7/64"
	_, err = NewConfig(nil, nil, br, nil)
	require.ErrorIs(t, err, ErrIPAMDisabled)
}
