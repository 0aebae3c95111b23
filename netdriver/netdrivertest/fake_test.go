package netdrivertest_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
)

// TestFakeAddressFlagsAndPrefixRoutes: the fake keeps what the exact
// restore of a pod link relies on, as the kernel does: an address's
// settable flags, no prefix route for noprefixroute, and a prefix route
// deleted with RouteDel stays away until its address is added again.
func TestFakeAddressFlagsAndPrefixRoutes(t *testing.T) {
	f := netdrivertest.NewFake()
	require.NoError(t, f.AddDummy("eth0"))
	require.NoError(t, f.SetUp("eth0"))
	a := netip.MustParsePrefix("10.244.1.7/24")
	b := netip.MustParsePrefix("fd00::7/64")
	require.NoError(t, f.AddrReplaceFlags("eth0", netdriver.FlaggedAddr{Prefix: a, Flags: 0x80 | 0x02}))
	require.NoError(t, f.AddrReplaceFlags("eth0", netdriver.FlaggedAddr{Prefix: b, Flags: 0x200}))

	got, err := f.AddrListFlags("eth0", netdriver.IPv4)
	require.NoError(t, err)
	require.Equal(t, []netdriver.FlaggedAddr{{Prefix: a, Flags: 0x02}}, got, "only the settable flags stay")
	kernelRoutes := func(fam netdriver.Family) []netip.Prefix {
		rs, err := f.RouteList("eth0", fam)
		require.NoError(t, err)
		var out []netip.Prefix
		for _, r := range rs {
			if r.Kernel {
				out = append(out, r.Dst)
			}
		}
		return out
	}
	require.Empty(t, kernelRoutes(netdriver.IPv6), "noprefixroute")
	require.Equal(t, []netip.Prefix{a.Masked()}, kernelRoutes(netdriver.IPv4))

	require.NoError(t, f.RouteDel(netdriver.Route{Dst: a.Masked(), Link: "eth0", Kernel: true}))
	require.Empty(t, kernelRoutes(netdriver.IPv4))
	require.NoError(t, f.AddrReplace("eth0", a), "replacing an address it has")
	require.Empty(t, kernelRoutes(netdriver.IPv4), "a replace of a present address brings no route back")
	require.NoError(t, f.AddrDel("eth0", a))
	require.NoError(t, f.AddrReplace("eth0", a))
	require.Equal(t, []netip.Prefix{a.Masked()}, kernelRoutes(netdriver.IPv4), "a new address brings its prefix route")
}
