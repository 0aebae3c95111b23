//go:build linux

package kernelvm

import (
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/testutil"
)

// inNewNetns runs fn with a netlink handle in a new network namespace, on a
// locked thread that is discarded afterwards (see probe).
func inNewNetns(t *testing.T, fn func(h *netlink.Handle)) {
	t.Helper()
	testutil.RequireRoot(t)
	done := make(chan struct{})
	var (
		h   *netlink.Handle
		err error
	)
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		var ns netns.NsHandle
		ns, err = netns.New()
		if err != nil {
			return
		}
		t.Cleanup(func() { _ = ns.Close() })
		h, err = netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	}()
	<-done
	require.NoError(t, err, "new network namespace")
	t.Cleanup(h.Close)
	fn(h)
}

// TestDummyAddressInVM creates a dummy link, gives it 192.0.2.1/24, sets
// it up and reads both back through netlink.
func TestDummyAddressInVM(t *testing.T) {
	t.Parallel() // two VMs boot side by side on two cores
	if Delegate(t, "dummy") {
		return
	}
	inNewNetns(t, func(h *netlink.Handle) {
		la := netlink.NewLinkAttrs()
		la.Name = "dummy0"
		require.NoError(t, h.LinkAdd(&netlink.Dummy{LinkAttrs: la}), "ip link add dummy0 type dummy")
		link, err := h.LinkByName("dummy0")
		require.NoError(t, err)
		require.Equal(t, "dummy", link.Type())

		addr, err := netlink.ParseAddr("192.0.2.1/24")
		require.NoError(t, err)
		require.NoError(t, h.AddrAdd(link, addr), "ip addr add 192.0.2.1/24 dev dummy0")
		require.NoError(t, h.LinkSetUp(link), "ip link set dummy0 up")

		link, err = h.LinkByName("dummy0")
		require.NoError(t, err)
		require.NotZero(t, link.Attrs().Flags&net.FlagUp, "dummy0 is not up")
		addrs, err := h.AddrList(link, netlink.FAMILY_V4)
		require.NoError(t, err)
		require.Len(t, addrs, 1)
		require.Equal(t, "192.0.2.1/24", addrs[0].IPNet.String())
	})
}

// TestMacvtapOnDummyInVM creates a macvtap in bridge mode on top of a
// dummy and checks its type, mode and lower device.
func TestMacvtapOnDummyInVM(t *testing.T) {
	t.Parallel()
	if Delegate(t, "dummy", "macvtap") {
		return
	}
	inNewNetns(t, func(h *netlink.Handle) {
		la := netlink.NewLinkAttrs()
		la.Name = "lower0"
		require.NoError(t, h.LinkAdd(&netlink.Dummy{LinkAttrs: la}))
		lower, err := h.LinkByName("lower0")
		require.NoError(t, err)
		require.NoError(t, h.LinkSetUp(lower))

		ma := netlink.NewLinkAttrs()
		ma.Name = "mvtap0"
		ma.ParentIndex = lower.Attrs().Index
		mv := &netlink.Macvtap{Macvlan: netlink.Macvlan{LinkAttrs: ma, Mode: netlink.MACVLAN_MODE_BRIDGE}}
		require.NoError(t, h.LinkAdd(mv), "ip link add link lower0 name mvtap0 type macvtap mode bridge")

		got, err := h.LinkByName("mvtap0")
		require.NoError(t, err)
		require.Equal(t, "macvtap", got.Type())
		require.Equal(t, lower.Attrs().Index, got.Attrs().ParentIndex)
		tap, ok := got.(*netlink.Macvtap)
		require.True(t, ok, "link is %T", got)
		require.Equal(t, netlink.MACVLAN_MODE_BRIDGE, tap.Mode)
	})
}
