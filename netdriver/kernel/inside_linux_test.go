package kernel_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestAddTapKernel: the real driver's taps are persistent taps of the
// owner, group, queue mode and MTU asked for, with a virtio-net header and
// no packet information (what QEMU opens them with); a second tap of the
// same name is refused and leaves the first as it was.
func TestAddTapKernel(t *testing.T) {
	ns := testutil.NewNS(t, "vn-tap")
	d, err := kernel.Open(ns.Path)
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
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	other, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	require.NoError(t, other.Close())

	home, err := kernel.Open("/proc/self/ns/net")
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

// TestLinkQueriesMatchDumps: the real driver's AddrList and Learning,
// which ask the kernel about one link, answer what the dumps of
// vishvananda/netlink filtered in user space answer: addresses of
// universe scope read the same way (point-to-point ones as the local
// host address), link-local ones left out; each port's learning flag;
// errors for a link that is not a port and for a missing link; a link
// recreated behind the driver's back is looked up again.
func TestLinkQueriesMatchDumps(t *testing.T) {
	ns := testutil.NewNS(t, "vn-lq")
	h := ns.Handle
	d, err := kernel.Open(ns.Path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })

	mustAddr := func(link, cidr, peer string) {
		t.Helper()
		l, err := h.LinkByName(link)
		require.NoError(t, err)
		a, err := netlink.ParseAddr(cidr)
		require.NoError(t, err)
		if peer != "" {
			p, err := netlink.ParseAddr(peer)
			require.NoError(t, err)
			a.Peer = p.IPNet
		}
		a.Flags = unix.IFA_F_NODAD
		require.NoError(t, h.AddrAdd(l, a))
	}
	for i := range 4 {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = fmt.Sprintf("v%d", i)
		require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: fmt.Sprintf("w%d", i)}))
		require.NoError(t, d.SetUp(attrs.Name))
	}
	mustAddr("v0", "10.1.0.1/24", "")
	mustAddr("v0", "10.1.0.9/24", "") // secondary
	mustAddr("v0", "fd00:1::1/64", "")
	mustAddr("v1", "10.2.0.1/32", "10.2.0.2/32") // point-to-point
	mustAddr("v1", "fd00:2::1/128", "fd00:2::2/128")
	mustAddr("w2", "192.168.7.1/30", "")

	want := func(link string, fam int) []netip.Prefix {
		l, err := h.LinkByName(link)
		require.NoError(t, err)
		addrs, err := h.AddrList(l, fam)
		require.NoError(t, err)
		var out []netip.Prefix
		for _, a := range addrs {
			if a.Scope != unix.RT_SCOPE_UNIVERSE {
				continue
			}
			ip, ok := netip.AddrFromSlice(a.IP)
			require.True(t, ok)
			ones, _ := a.Mask.Size()
			out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
		}
		return out
	}
	for _, link := range []string{"v0", "v1", "v2", "w2", "v3", "lo"} {
		for _, fam := range []struct {
			f  netdriver.Family
			nl int
		}{{netdriver.IPv4, netlink.FAMILY_V4}, {netdriver.IPv6, netlink.FAMILY_V6}} {
			got, err := d.AddrList(link, fam.f)
			require.NoError(t, err)
			require.Equal(t, want(link, fam.nl), got, "%s family %d", link, fam.nl)
		}
	}
	got, err := d.AddrList("v1", netdriver.IPv4)
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.2.0.1/32")}, got)

	_, err = d.AddrList("missing0", netdriver.IPv4)
	require.ErrorIs(t, err, netdriver.ErrLinkNotFound)

	// Learning: two ports of a bridge, one with learning off.
	require.NoError(t, d.AddBridge("br0", 0, nil))
	require.NoError(t, d.SetMaster("v2", "br0"))
	require.NoError(t, d.SetMaster("v3", "br0"))
	require.NoError(t, d.SetLearning("v3", false))
	for _, port := range []string{"v2", "v3"} {
		l, err := h.LinkByName(port)
		require.NoError(t, err)
		pi, err := h.LinkGetProtinfo(l)
		require.NoError(t, err)
		on, err := d.Learning(port)
		require.NoError(t, err)
		require.Equal(t, pi.Learning, on, port)
		require.Equal(t, port == "v2", on, port)
	}
	_, err = d.Learning("v0")
	require.ErrorContains(t, err, "not a bridge port")
	_, err = d.Learning("missing0")
	require.ErrorIs(t, err, netdriver.ErrLinkNotFound)

	// Recreated behind the driver's back: the cached index is stale.
	l, err := h.LinkByName("v0")
	require.NoError(t, err)
	require.NoError(t, h.LinkDel(l))
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "v0"
	require.NoError(t, h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "w0"}))
	mustAddr("v0", "10.9.0.1/16", "")
	got, err = d.AddrList("v0", netdriver.IPv4)
	require.NoError(t, err)
	require.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.9.0.1/16")}, got)
}
