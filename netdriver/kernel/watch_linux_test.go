package kernel_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestResolveNeighborWaitsForTheKernel: a neighbour that answers only
// after a while (its address appears on the node's side 200 ms after the
// call starts; the kernel's next ARP probe finds it) is resolved from the
// kernel's neighbour update, not by looking at the table again and again:
// the call makes two table looks (before and after subscribing) whatever
// the wait. A 50 ms poll makes one more look per 50 ms of waiting.
func TestResolveNeighborWaitsForTheKernel(t *testing.T) {
	pod := testutil.NewPod(t)
	d, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	nodeLink, err := pod.Node.Handle.LinkByName(pod.NodeLink)
	require.NoError(t, err)
	late, err := netlink.ParseAddr("10.244.1.9/24")
	require.NoError(t, err)
	added := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		added <- pod.Node.Handle.AddrAdd(nodeLink, late)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = d.LinkByName(pod.PodLink) // the link's index, known from now on
	require.NoError(t, err)
	before := d.Requests()
	mac, err := d.ResolveNeighbor(ctx, pod.PodLink, netip.MustParseAddr("10.244.1.9"))
	require.NoError(t, err)
	require.NoError(t, <-added)
	require.Equal(t, nodeLink.Attrs().HardwareAddr.String(), mac.String())
	require.Equal(t, int64(2), d.Requests()-before, "table looks: one before subscribing, one after")

	// Known now: one look, no subscription.
	before = d.Requests()
	mac, err = d.ResolveNeighbor(ctx, pod.PodLink, netip.MustParseAddr("10.244.1.9"))
	require.NoError(t, err)
	require.Equal(t, nodeLink.Attrs().HardwareAddr.String(), mac.String())
	require.Equal(t, int64(1), d.Requests()-before)

	// ctx ends the wait for a neighbour that never answers.
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	_, err = d.ResolveNeighbor(short, pod.PodLink, netip.MustParseAddr("10.244.1.200"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestWatchAddrs: the driver reports a change of the watched link's
// addresses (an address added, its flags changed), skips other links',
// and stops cleanly.
func TestWatchAddrs(t *testing.T) {
	ns := testutil.NewNS(t, "vn-watch")
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	require.NoError(t, d.AddBridge("b0", 1500, nil))
	require.NoError(t, d.AddBridge("b1", 1500, nil))

	var w netdriver.AddrWatcher = d
	changes, stop, err := w.WatchAddrs("b0")
	require.NoError(t, err)
	require.NoError(t, d.AddrReplaceFlags("b1", netdriver.FlaggedAddr{Prefix: netip.MustParsePrefix("192.0.2.2/24")}))
	require.NoError(t, d.AddrReplaceFlags("b0", netdriver.FlaggedAddr{Prefix: netip.MustParsePrefix("192.0.2.1/24")}))
	select {
	case _, ok := <-changes:
		require.True(t, ok)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no change reported for b0's new address")
	}
	addrs, err := d.AddrListFlags("b0", netdriver.IPv4)
	require.NoError(t, err)
	require.Len(t, addrs, 1, "the change reported is b0's")
	stop()

	_, _, err = w.WatchAddrs("nope")
	require.ErrorIs(t, err, netdriver.ErrLinkNotFound)
}
