//go:build linux

package kernelvm

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/testrig/testutil"
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
	testutil.SkipCoveredUnderRace(t, "the harness's host side runs under -race in TestDummyAddressInVM and every kernel VM test the race pass keeps")
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

// TestHostRootInVM runs inside a VM chrooted into the host's root shared
// read-only over 9p: the host's files are there at their paths (this test
// binary's source directory, the QEMU binary), the root refuses writes, and
// /tmp takes them.
func TestHostRootInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "the harness's host side runs under -race in TestDummyAddressInVM and every kernel VM test the race pass keeps")
	if DelegateWith(t, Options{Always: true, HostRoot: true}) {
		return
	}
	require.Equal(t, "1", os.Getenv(EnvHostRoot))
	qemu, err := qemuPath()
	require.NoError(t, err, "the host's QEMU through the share")
	st, err := os.Stat(qemu)
	require.NoError(t, err)
	require.True(t, st.Mode().IsRegular())
	_, err = os.Stat(filepath.Join(assetDir(), "vmlinuz"))
	require.NoError(t, err, "the host's kernel VM assets through the share")
	err = os.WriteFile("/etc/virtnet-hostroot-probe", []byte("x"), 0o644)
	require.ErrorIs(t, err, syscall.EROFS, "the host root must be read-only")
	require.NoError(t, os.WriteFile(filepath.Join(os.TempDir(), "probe"), []byte("x"), 0o644))
	// The proc mounted inside is the guest's own: its kernel is the
	// Debian one booted, not the host's.
	v, err := os.ReadFile("/proc/sys/kernel/osrelease")
	require.NoError(t, err)
	a, err := loadAssets(assetDir())
	require.NoError(t, err)
	require.Equal(t, a.version, strings.TrimSpace(string(v)))
}
