package dhcp

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProcAddr: the addresses of /proc/net/udp and udp6 as the kernel
// prints them on this machine's byte order.
func TestProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:0043":                         "0.0.0.0:67",
		"0100007F:0043":                         "127.0.0.1:67",
		"00000000000000000000000001000000:0223": "[::1]:547",
		"0000000000000000FFFF00000100007F:0043": "127.0.0.1:67",
	} {
		a, p, ok := procAddr(in)
		require.True(t, ok, in)
		require.Equal(t, want, netipAddrPort(a, p), in)
	}
	for _, bad := range []string{"", "0043", "0000000:0043", "00000000:zz", "0000000G:0043"} {
		_, _, ok := procAddr(bad)
		require.False(t, ok, bad)
	}
}

func netipAddrPort(a netip.Addr, p int) string { return netip.AddrPortFrom(a, uint16(p)).String() }
