package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/virtnet/virtnet/cache"
	"golang.org/x/sys/unix"
)

// squat tries to bind UDP port on device ("" for none) in the lab's pod
// namespace with SO_REUSEADDR and SO_REUSEPORT, as a process of the pod
// that wants a share of the VM's DHCP traffic would.
func squat(l *lab, family, port int, device string) error {
	return l.pod.Do(func() error {
		fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, o := range []int{unix.SO_REUSEADDR, unix.SO_REUSEPORT} {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o, 1); err != nil {
				return err
			}
		}
		if family == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
				return err
			}
		}
		if device != "" {
			if err := unix.BindToDevice(fd, device); err != nil {
				return err
			}
		}
		var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port}
		if family == unix.AF_INET6 {
			sa = &unix.SockaddrInet6{Port: port}
		}
		return unix.Bind(fd, sa)
	})
}

// TestDHCPSocketsExclusive: while the server runs, no other socket of the
// pod can bind its ports (67, 547) beside it, even with SO_REUSEADDR and
// SO_REUSEPORT, on the bridge or on no device: nobody else receives the
// VM's DHCP (the library's own sockets set both options, so another
// process could share them).
func TestDHCPSocketsExclusive(t *testing.T) {
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, "52:54:00:12:34:56")
	rec := masqRecord()
	rec.MAC = cache.MustParseMAC("52:54:00:12:34:56")
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, s)
	for _, tc := range []struct {
		family, port int
	}{{unix.AF_INET, 67}, {unix.AF_INET6, 547}} {
		for _, dev := range []string{"", l.bridge} {
			err := squat(l, tc.family, tc.port, dev)
			require.True(t, errors.Is(err, unix.EADDRINUSE), fmt.Sprintf("port %d on device %q: %v", tc.port, dev, err))
		}
	}
}

// TestSecondServerNamesHolder: a second server for the same bridge (a
// second launcher serving the VM) fails with a *BindError naming the
// process that holds the port: here, this test's own.
func TestSecondServerNamesHolder(t *testing.T) {
	l := newLab(t, []string{"10.0.2.1/24"}, "52:54:00:12:34:56")
	rec := masqRecord()
	rec.MAC = cache.MustParseMAC("52:54:00:12:34:56")
	rec.IPv6, rec.GatewayIPv6 = netip.Prefix{}, netip.Addr{}
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	first, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, first)
	second, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	err = second.Serve(context.Background())
	var be *BindError
	require.ErrorAs(t, err, &be)
	require.ErrorIs(t, err, unix.EADDRINUSE)
	comm, rerr := os.ReadFile("/proc/self/comm")
	require.NoError(t, rerr)
	want := fmt.Sprintf("pid %d (%s)", os.Getpid(), strings.TrimSpace(string(comm)))
	require.Equal(t, want, be.Holder)
	require.ErrorContains(t, err, "held by "+want+": another launcher or DHCP server already serves this interface")
}
