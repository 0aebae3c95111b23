package prestart_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const bridgeYAML = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: testvm, namespace: ns1, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, bridge: {}}]
  networks: [{name: default, pod: {}}]
`

// withoutNetAdmin runs fn on a locked OS thread whose effective
// capabilities lack CAP_NET_ADMIN (capabilities are per thread; the
// permitted set keeps it, so that it is raised again afterwards).
func withoutNetAdmin(t *testing.T, fn func()) {
	t.Helper()
	testutil.RequireRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var saved [2]unix.CapUserData
	require.NoError(t, unix.Capget(&hdr, &saved[0]))
	dropped := saved
	dropped[0].Effective &^= 1 << unix.CAP_NET_ADMIN
	require.NoError(t, unix.Capset(&hdr, &dropped[0]))
	defer func() { require.NoError(t, unix.Capset(&hdr, &saved[0])) }()
	has, err := prestart.HasNetAdmin()
	require.NoError(t, err)
	require.False(t, has, "CAP_NET_ADMIN dropped on this thread")
	fn()
}

// TestInterfaceTypeFollowsCapabilities: without CAP_NET_ADMIN the default
// renders type='ethernet' on phase1's tap (libvirt could not create the
// tap of type='bridge'); an explicit bridge is refused by option name
// before any step; with CAP_NET_ADMIN the default stays bridge. The
// capability is really dropped from the thread the hook runs on.
func TestInterfaceTypeFollowsCapabilities(t *testing.T) {
	hook := func(t *testing.T, it binding.InterfaceType) *prestart.Hook {
		h := networkHook(t, bridgeYAML, "")
		testutil.WriteRecord(t, h.Store, uid, &cache.Interface{
			Interface: "default", PodInterface: "eth0", Binding: "bridge",
			Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic", MAC: cache.MustParseMAC("02:00:00:00:00:01"), MTU: 1440, IPAMDisabled: true,
		})
		testutil.WriteRecord(t, h.Store, uid, &cache.Progress{
			Interface: "default", PodInterface: "eth0", Binding: "bridge", State: cache.Finished,
		})
		h.InterfaceType = it
		return h
	}
	ifaceType := func(t *testing.T, h *prestart.Hook) string {
		require.Len(t, h.Domain.Devices.Interfaces, 1)
		i := h.Domain.Devices.Interfaces[0]
		switch {
		case i.Source != nil && i.Source.Bridge != nil:
			return "bridge"
		case i.Source != nil && i.Source.Ethernet != nil:
			require.Equal(t, "tap0", i.Target.Dev)
			return "ethernet"
		}
		t.Fatalf("unexpected interface %+v", i)
		return ""
	}

	t.Run("default without CAP_NET_ADMIN: ethernet", func(t *testing.T) {
		h := hook(t, "")
		withoutNetAdmin(t, func() {
			r, err := h.Run(context.Background())
			require.NoError(t, err)
			require.NoError(t, r.Stop())
		})
		require.Equal(t, "ethernet", ifaceType(t, h))
	})
	t.Run("bridge without CAP_NET_ADMIN: refused", func(t *testing.T) {
		h := hook(t, binding.InterfaceBridge)
		withoutNetAdmin(t, func() {
			_, err := h.Run(context.Background())
			require.ErrorIs(t, err, prestart.ErrNeedsNetAdmin)
			require.ErrorContains(t, err, `InterfaceType "bridge": `)
			require.ErrorContains(t, err, "(interfaces default)")
		})
		require.Nil(t, h.Domain.Devices.Interfaces, "nothing rendered")
	})
	t.Run("default with CAP_NET_ADMIN: bridge", func(t *testing.T) {
		testutil.RequireRoot(t)
		h := hook(t, "")
		r, err := h.Run(context.Background())
		require.NoError(t, err)
		require.NoError(t, r.Stop())
		require.Equal(t, "bridge", ifaceType(t, h))
	})
}
