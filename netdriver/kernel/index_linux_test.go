package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestIndexCache: the real driver reuses the ifindex of names it looked
// up, follows its own renames and deletions, and recovers when a link was
// recreated behind its back; reusing the index saves round trips.
func TestIndexCache(t *testing.T) {
	ns := testutil.NewNS(t, "vn-idx")
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	require.NoError(t, d.AddBridge("b0", 1500, nil))
	require.NoError(t, d.SetUp("b0"))
	before := d.Requests()
	require.NoError(t, d.SetMTU("b0", 1400))
	require.Equal(t, int64(1), d.Requests()-before, "a known name costs no lookup")

	// Recreated by someone else: the cached index is stale.
	l, err := ns.Handle.LinkByName("b0")
	require.NoError(t, err)
	require.NoError(t, ns.Handle.LinkDel(l))
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "b0"
	require.NoError(t, ns.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}))
	require.NoError(t, d.SetMTU("b0", 1300), "a stale index is looked up again")
	l, err = ns.Handle.LinkByName("b0")
	require.NoError(t, err)
	require.Equal(t, 1300, l.Attrs().MTU)

	require.NoError(t, d.SetDown("b0"))
	require.NoError(t, d.SetName("b0", "b1"))
	require.NoError(t, d.SetUp("b1"))
	_, err = d.LinkByName("b0")
	require.ErrorIs(t, err, netdriver.ErrLinkNotFound)
	got, err := d.LinkByName("b1")
	require.NoError(t, err)
	require.True(t, got.Up)

	require.NoError(t, d.DeleteLink("b1"))
	err = d.SetUp("b1")
	require.ErrorIs(t, err, netdriver.ErrLinkNotFound, "a deleted name is not served from the cache")
}
