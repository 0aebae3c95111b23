package kernelops

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// listCounter counts the address lists made through a kernel driver.
type listCounter struct {
	*kernel.Netlink
	lists int
}

func (c *listCounter) AddrListFlags(name string, f netdriver.Family) ([]netdriver.FlaggedAddr, error) {
	c.lists++
	return c.Netlink.AddrListFlags(name, f)
}

// TestWaitDADFollowsTheKernel: waitDAD returns once duplicate address
// detection of a restored IPv6 address ends (about a second: one
// neighbour solicitation, then the retransmit time), woken by the
// kernel's address updates: a handful of lists (before and after
// watching, one per update of the link: its link-local address's
// detection ends too), where a 50 ms poll lists about twenty times.
func TestWaitDADFollowsTheKernel(t *testing.T) {
	ns := testutil.NewNS(t, "vn-dad")
	testutil.AddVeth(t, ns, "d0", ns, "d1", 1500)
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	require.NoError(t, d.SetSysctl("ipv6/conf/d0/accept_dad", "1"))
	require.NoError(t, d.SetUp("d1"))
	require.NoError(t, d.SetUp("d0"))
	p := netip.MustParsePrefix("2001:db8::7/64")
	require.NoError(t, d.AddrReplaceFlags("d0", netdriver.FlaggedAddr{Prefix: p}))
	addrs, err := d.AddrListFlags("d0", netdriver.IPv6)
	require.NoError(t, err)
	tentative := false
	for _, a := range addrs {
		tentative = tentative || (a.Prefix == p && a.Flags&netdriver.AddrFlagTentative != 0)
	}
	require.True(t, tentative, "the address is tentative at first: %v", addrs)

	c := &listCounter{Netlink: d}
	require.NoError(t, waitDAD(context.Background(), c, "d0"))
	addrs, err = d.AddrListFlags("d0", netdriver.IPv6)
	require.NoError(t, err)
	for _, a := range addrs {
		require.Zero(t, a.Flags&netdriver.AddrFlagTentative, "%s still tentative", a.Prefix)
	}
	require.LessOrEqual(t, c.lists, 6, "lists while detection ran")
}
