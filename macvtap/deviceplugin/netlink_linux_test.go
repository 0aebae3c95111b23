package deviceplugin

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestNetlinkLister reads real links of a fresh namespace: lo, a veth pair
// with one end in a bridge. None of them may carry macvtaps.
func TestNetlinkLister(t *testing.T) {
	ns := testutil.NewNS(t, "vn-dplist")
	testutil.AddVeth(t, ns, "veth0", ns, "veth1", 1500)
	la := netlink.NewLinkAttrs()
	la.Name = "br0"
	require.NoError(t, ns.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: la}))
	br, err := ns.Handle.LinkByName("br0")
	require.NoError(t, err)
	v1, err := ns.Handle.LinkByName("veth1")
	require.NoError(t, err)
	require.NoError(t, ns.Handle.LinkSetMaster(v1, br))

	l, err := NewNetlinkLister(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	links, err := l.Links(t.Context())
	require.NoError(t, err)
	byName := map[string]Link{}
	for _, x := range links {
		byName[x.Name] = x
	}
	require.Equal(t, Link{Name: "lo", Kind: "", EncapType: "loopback", Flags: byName["lo"].Flags}, byName["lo"])
	require.NotZero(t, byName["lo"].Flags&net.FlagLoopback)
	require.Equal(t, "veth", byName["veth0"].Kind)
	require.Equal(t, "ether", byName["veth0"].EncapType)
	require.Equal(t, br.Attrs().Index, byName["veth1"].MasterIndex)
	require.Equal(t, "bridge", byName["br0"].Kind)

	res, err := Discover(t.Context(), l)
	require.NoError(t, err)
	require.Empty(t, res, "no physical NIC in a fresh namespace")

	_, err = NewNetlinkLister("/nonexistent/netns")
	require.ErrorContains(t, err, `open netns "/nonexistent/netns"`)
}
