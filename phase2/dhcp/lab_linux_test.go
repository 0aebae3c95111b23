package dhcp

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// lab is a "pod" namespace holding a bridge and one "VM" namespace per
// client, each joined to the bridge by a veth (tapN in the pod, eth0 in
// the client): the shape of the bridge and masquerade bindings.
type lab struct {
	pod     *testutil.NS
	bridge  string
	clients []*testutil.NS
}

// newLab builds the lab; the bridge gets brAddrs (CIDRs; IPv6 ones
// without duplicate address detection) and client i the MAC macs[i].
func newLab(t testing.TB, brAddrs []string, macs ...string) *lab {
	t.Helper()
	testutil.RequireRoot(t)
	l := &lab{pod: testutil.NewNS(t, "vn-dhcp-pod"), bridge: "k6t-eth0"}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.bridge
	require.NoError(t, l.pod.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}))
	br, err := l.pod.Handle.LinkByName(l.bridge)
	require.NoError(t, err)
	for _, a := range brAddrs {
		addr, err := netlink.ParseAddr(a)
		require.NoError(t, err)
		if addr.IP.To4() == nil {
			addr.Flags = unix.IFA_F_NODAD
		}
		require.NoError(t, l.pod.Handle.AddrAdd(br, addr))
	}
	require.NoError(t, l.pod.Handle.LinkSetUp(br))
	for i, mac := range macs {
		c := testutil.NewNS(t, "vn-dhcp-vm")
		tap := "tap" + string(rune('0'+i))
		testutil.AddVeth(t, l.pod, tap, c, "eth0", 1500)
		tl, err := l.pod.Handle.LinkByName(tap)
		require.NoError(t, err)
		require.NoError(t, l.pod.Handle.LinkSetMaster(tl, br))
		el, err := c.Handle.LinkByName("eth0")
		require.NoError(t, err)
		hw, err := net.ParseMAC(mac)
		require.NoError(t, err)
		require.NoError(t, c.Handle.LinkSetHardwareAddr(el, hw))
		l.clients = append(l.clients, c)
	}
	return l
}

// serve starts s and returns once its sockets are bound; the server is
// stopped and waited for when the test ends.
func serve(t testing.TB, s *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case <-s.Ready():
	case err := <-done:
		done <- err
		require.NoError(t, err)
	}
}

// run runs a program inside ns (the child inherits the namespace of the
// locked thread that forks it).
func run(ns *testutil.NS, cmd *exec.Cmd) error {
	return ns.Do(cmd.Run)
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

func needBinary(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testutil.Skip(t, name+" (Debian package "+pkg+")")
	}
	return p
}

func writeScript(t testing.TB, body string) string {
	t.Helper()
	p := t.TempDir() + "/script.sh"
	require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
	return p
}

// poll calls f until it returns nil or tries run out (steps of 100ms).
func poll(tries int, f func() error) error {
	var err error
	for range tries {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

var errNotYet = errors.New("not yet")
