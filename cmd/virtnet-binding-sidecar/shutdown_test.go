//go:build linux

package main

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// bindDHCPPort binds UDP 67 on the pod's bridge, as the DHCP server does
// (no SO_REUSEADDR/SO_REUSEPORT), and closes it: EADDRINUSE while a server
// holds it.
func bindDHCPPort(pod *testutil.Pod, bridge string) error {
	return pod.Pod.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.BindToDevice(fd, bridge); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Port: 67})
	})
}

// TestShutdownExitsWhateverClientsDo: once Shutdown is answered, the
// sidecar process exits, its DHCP socket closed, whatever its other
// clients do: here one holds a stream whose message it never sends and
// another a raw connection on which it sends nothing (not even HTTP/2's
// preface). Before, the raw connection held gRPC's stop for its handshake
// timeout (120 s), the stalled stream with it, and the DHCP server served
// on all along; the sidecar now closes every connection once its grace
// (5 s) is over and ends.
func TestShutdownExitsWhateverClientsDo(t *testing.T) {
	testutil.RequireRoot(t)
	setpriv := needBinary(t, "setpriv")
	pod := testutil.NewPod(t)
	prepare(t, pod, api.BindingMasquerade)
	sc := startSidecar(t, setpriv, pod, "virtnet-masquerade")
	c := &client{t: t, sock: sc.sock}
	domain, vmiJSON := masqueradeInputs(t)
	_, err := c.define(domain, vmiJSON)
	require.NoError(t, err, "sidecar log:\n%s", sc.logs)
	require.ErrorIs(t, bindDHCPPort(pod, "k6t-eth0"), unix.EADDRINUSE, "the DHCP server holds UDP 67 on the bridge")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = c.conn().NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, v1alpha3.Callbacks_OnDefineDomain_FullMethodName)
	require.NoError(t, err)
	raw, err := net.Dial("unix", sc.sock)
	require.NoError(t, err)
	defer raw.Close()

	_, err = v1alpha3.NewCallbacksClient(c.conn()).Shutdown(ctx, &v1alpha3.ShutdownParams{})
	require.NoError(t, err)
	select {
	case err := <-sc.exited:
		require.NoError(t, err, "the sidecar exits cleanly; log:\n%s", sc.logs)
	case <-time.After(time.Minute): // a watchdog (the grace is 5 s), not a timing assertion
		t.Fatalf("the sidecar still runs a minute after Shutdown; log:\n%s", sc.logs)
	}
	require.NoError(t, bindDHCPPort(pod, "k6t-eth0"), "UDP 67 is free again")
	_, err = os.Stat(sc.sock)
	require.ErrorIs(t, err, os.ErrNotExist, "socket removed")
}
