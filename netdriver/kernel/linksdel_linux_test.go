package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestDeleteLinks: the links named go in one deletion, a missing name is
// skipped, and every other link stays, whatever its device group.
func TestDeleteLinks(t *testing.T) {
	ns := testutil.NewNS(t, "vn-dels")
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	for _, b := range []string{"b0", "b1", "keep0", "keep1"} {
		require.NoError(t, d.AddBridge(b, 1500, nil))
	}
	require.NoError(t, d.AddTap(netdriver.Tap{Name: "t0", MTU: 1500}))
	require.NoError(t, d.SetMaster("t0", "b0"))
	keep1, err := ns.Handle.LinkByName("keep1")
	require.NoError(t, err)
	require.NoError(t, ns.Handle.LinkSetGroup(keep1, 5))

	var ld netdriver.LinksDeleter = d
	require.NoError(t, ld.DeleteLinks("t0", "b0", "missing", "b1"))
	links, err := ns.Handle.LinkList()
	require.NoError(t, err)
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	require.ElementsMatch(t, []string{"lo", "keep0", "keep1"}, names)
	for _, gone := range []string{"t0", "b0", "b1"} {
		_, err := d.LinkByName(gone)
		require.ErrorIs(t, err, netdriver.ErrLinkNotFound, gone)
	}
	require.NoError(t, ld.DeleteLinks("keep0"))
	require.NoError(t, ld.DeleteLinks("gone", "also-gone"))
	_, err = ns.Handle.LinkByName("keep1")
	require.NoError(t, err)
	var nf netlink.LinkNotFoundError
	_, err = ns.Handle.LinkByName("keep0")
	require.ErrorAs(t, err, &nf)
}
