package dhcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestBindErrorNamesCapability: a launcher without CAP_NET_BIND_SERVICE
// (the capability really dropped from the thread that binds, in a pod
// whose ip_unprivileged_port_start is above 67) gets a *BindError whose
// message names the capability and the way around it; a refused
// namespace entry names CAP_SYS_ADMIN; other errors name none.
func TestBindErrorNamesCapability(t *testing.T) {
	l := newLab(t, []string{"169.254.75.10/32"})
	cfg, err := NewConfig(testVMI(), nil, bridgeRecord(), nil)
	require.NoError(t, err)
	var low int
	require.NoError(t, l.pod.Do(func() error {
		start, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start") // the pod's (per namespace)
		if err != nil {
			return err
		}
		_, err = fmt.Sscan(string(start), &low)
		return err
	}))
	if low <= 67 {
		testutil.Skip(t, fmt.Sprintf("the pod's net.ipv4.ip_unprivileged_port_start is %d: port 67 needs no capability there", low))
	}
	var serveErr error
	require.NoError(t, l.pod.Do(func() error {
		// In the lab's namespace, on one locked thread: the server's
		// namespace is "" (this thread's), so it binds here.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var saved [2]unix.CapUserData
		require.NoError(t, unix.Capget(&hdr, &saved[0]))
		dropped := saved
		dropped[0].Effective &^= 1 << unix.CAP_NET_BIND_SERVICE
		require.NoError(t, unix.Capset(&hdr, &dropped[0]))
		defer func() { require.NoError(t, unix.Capset(&hdr, &saved[0])) }()
		s, err := NewServer(cfg, testLogger(t))
		require.NoError(t, err)
		serveErr = s.Serve(context.Background())
		return nil
	}))
	var be *BindError
	require.ErrorAs(t, serveErr, &be)
	require.ErrorIs(t, serveErr, syscall.EACCES)
	require.Equal(t, CapNetBindService, be.Capability())
	require.Contains(t, serveErr.Error(), "needs CAP_NET_BIND_SERVICE")

	for _, tc := range []struct {
		err  *BindError
		want string
	}{
		{&BindError{Interface: "k6t-eth0", Op: OpEnterNamespace, Err: fmt.Errorf("enter network namespace /proc/1/ns/net: %w", syscall.EPERM)}, CapSysAdmin},
		{&BindError{Interface: "k6t-eth0", Op: OpEnterNamespace, Err: fmt.Errorf("open: %w", os.ErrNotExist)}, ""},
		{&BindError{Interface: "k6t-eth0", Op: "dhcpv6 udp [::]:547", Err: syscall.EADDRINUSE}, ""},
	} {
		require.Equal(t, tc.want, tc.err.Capability(), "%v", tc.err)
		if tc.want != "" {
			require.Contains(t, tc.err.Error(), "needs "+tc.want)
		}
		require.False(t, errors.Is(tc.err, syscall.EACCES) && tc.want == "")
	}
}
