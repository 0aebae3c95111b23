package netdriver_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/internal/netdriver"
	"github.com/virtnet/virtnet/internal/testutil"
)

// TestAddTapKernel: the real driver's taps are persistent taps of the
// owner, group, queue mode and MTU asked for, with a virtio-net header and
// no packet information (what QEMU opens them with); a second tap of the
// same name is refused and leaves the first as it was.
func TestAddTapKernel(t *testing.T) {
	ns := testutil.NewNS(t, "vn-tap")
	d, err := netdriver.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	for _, tc := range []struct {
		tap   netdriver.Tap
		flags netlink.TuntapFlag
	}{
		{netdriver.Tap{Name: "tap0", Owner: 107, Group: 107, MTU: 1440}, netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR},
		{netdriver.Tap{Name: "tap1", Owner: 0, Group: 0, MultiQueue: true}, netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR | netlink.TUNTAP_MULTI_QUEUE},
	} {
		require.NoError(t, d.AddTap(tc.tap))
		l, err := ns.Handle.LinkByName(tc.tap.Name)
		require.NoError(t, err, "the tap outlives the file that created it")
		tt, ok := l.(*netlink.Tuntap)
		require.True(t, ok, "%s is a %T", tc.tap.Name, l)
		require.Equal(t, netlink.TUNTAP_MODE_TAP, tt.Mode)
		require.Equal(t, uint32(tc.tap.Owner), tt.Owner)
		require.Equal(t, uint32(tc.tap.Group), tt.Group)
		require.False(t, tt.NonPersist, "persistent")
		require.Equal(t, tc.flags, tt.Flags)
		require.Zero(t, tt.Queues, "no queue attached once AddTap returned")
		if tc.tap.MTU > 0 {
			require.Equal(t, tc.tap.MTU, l.Attrs().MTU)
		}
	}
	err = d.AddTap(netdriver.Tap{Name: "tap0", Owner: 0, Group: 0})
	require.ErrorContains(t, err, `add tap "tap0"`)
	l, err := ns.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, uint32(107), l.(*netlink.Tuntap).Owner, "the refused tap changed nothing")
}

// TestInsideCallsKernel: sysctls and the ethtool switch go to the
// driver's namespace, never to the caller's, on one driver across many
// calls and after Close of another driver of the same namespace.
func TestInsideCallsKernel(t *testing.T) {
	ns := testutil.NewNS(t, "vn-ins")
	d, err := netdriver.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	other, err := netdriver.Open(ns.Path)
	require.NoError(t, err)
	require.NoError(t, other.Close())

	home, err := netdriver.Open("/proc/self/ns/net")
	require.NoError(t, err)
	t.Cleanup(func() { home.Close() })
	homeFwd, err := home.Sysctl("ipv4/ip_forward")
	require.NoError(t, err)

	want := "1"
	if homeFwd == "1" {
		want = "0"
	}
	require.NoError(t, d.SetSysctl("ipv4/ip_forward", want))
	got, err := d.Sysctl("ipv4/ip_forward")
	require.NoError(t, err)
	require.Equal(t, want, got)
	after, err := home.Sysctl("ipv4/ip_forward")
	require.NoError(t, err)
	require.Equal(t, homeFwd, after, "the caller's namespace is untouched")

	require.NoError(t, d.AddBridge("br0", 0, nil))
	for _, on := range []bool{false, true, false} {
		require.NoError(t, d.SetTXChecksum("br0", on))
		got, err := d.TXChecksum("br0")
		require.NoError(t, err)
		require.Equal(t, on, got)
	}
	_, err = d.TXChecksum("missing0")
	require.ErrorContains(t, err, `"missing0"`)
}
