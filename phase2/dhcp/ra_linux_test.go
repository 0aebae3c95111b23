package dhcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// noCarrierLab is a dual-stack masquerade bridge whose one port (tap0)
// has no carrier yet: the state of the pod when the preStartHook runs,
// before QEMU opened the tap. The bridge then has no link-local address.
// plugIn gives the port its carrier (as QEMU opening the tap does).
func noCarrierLab(t *testing.T) (l *lab, plugIn func()) {
	t.Helper()
	testutil.RequireRoot(t)
	l = &lab{pod: testutil.NewNS(t, "vn-dhcp-pod"), bridge: "k6t-eth0"}
	vm := testutil.NewNS(t, "vn-dhcp-vm")
	l.clients = append(l.clients, vm)
	attrs := netlink.NewLinkAttrs()
	attrs.Name = l.bridge
	require.NoError(t, l.pod.Handle.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}))
	br, err := l.pod.Handle.LinkByName(l.bridge)
	require.NoError(t, err)
	for _, a := range []string{"10.0.2.1/24", "fd10:0:2::1/120"} {
		addr, err := netlink.ParseAddr(a)
		require.NoError(t, err)
		addr.Flags = unix.IFA_F_NODAD
		require.NoError(t, l.pod.Handle.AddrAdd(br, addr))
	}
	vmns, err := netns.GetFromName(vm.Name)
	require.NoError(t, err)
	defer vmns.Close()
	attrs = netlink.NewLinkAttrs()
	attrs.Name = "tap0"
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(vmns),
		PeerHardwareAddr: mustMAC(t, "52:54:00:12:34:56")}
	require.NoError(t, l.pod.Handle.LinkAdd(veth))
	tap, err := l.pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.NoError(t, l.pod.Handle.LinkSetMaster(tap, br))
	require.NoError(t, l.pod.Handle.LinkSetUp(tap))
	require.NoError(t, l.pod.Handle.LinkSetUp(br)) // after its port: no carrier
	return l, func() {
		eth0, err := vm.Handle.LinkByName("eth0")
		require.NoError(t, err)
		require.NoError(t, vm.Handle.LinkSetUp(eth0))
	}
}

func linkLocals(t *testing.T, ns *testutil.NS, name string) []netlink.Addr {
	t.Helper()
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	addrs, err := ns.Handle.AddrList(l, netlink.FAMILY_V6)
	require.NoError(t, err)
	var out []netlink.Addr
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			out = append(out, a)
		}
	}
	return out
}

// TestRouterAdvertisementsAfterCarrier: with the bridge still without a
// carrier (hence without a link-local address), Serve is ready at once
// with DHCPv4 and DHCPv6 bound; once the port gets its carrier, the
// kernel adds the address, the server learns it from its netlink
// subscription and advertises: rdisc6 in the VM namespace receives the
// advertisement, managed flag, MTU, prefix, and the pod's IPv6 nameserver
// (RDNSS) and search list (DNSSL); udhcpc and dhclient -6 then lease.
func TestRouterAdvertisementsAfterCarrier(t *testing.T) {
	rdisc6 := needBinary(t, "rdisc6", "ndisc6")
	l, plugIn := noCarrierLab(t)
	require.Empty(t, linkLocals(t, l.pod, l.bridge), "the bridge must have no link-local address before the carrier")

	rec := masqRecord()
	rec.MAC = cache.MustParseMAC("52:54:00:12:34:56")
	cfg, err := NewConfig(testVMI(), nil, rec, []byte(podResolvConf))
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := NewServer(cfg, newTestLogger(t, logs), WithNetNS(l.pod.Path), withRAInterval(time.Second))
	require.NoError(t, err)
	serve(t, s) // ready although no link-local address exists
	require.Empty(t, linkLocals(t, l.pod, l.bridge))
	require.NotContains(t, logs.String(), "router advertisements started")

	plugIn()
	vm := l.clients[0]
	linkLocal(t, vm, "eth0")
	brLL := linkLocal(t, l.pod, l.bridge)
	var out string
	require.NoError(t, poll(50, func() error {
		cmd := exec.Command(rdisc6, "-1", "-n", "-r", "3", "-w", "1000", "eth0")
		b := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = b, b
		err := run(vm, cmd)
		out = b.String()
		if err != nil {
			return fmt.Errorf("rdisc6: %w: %s: %w", err, out, errNotYet)
		}
		return nil
	}))
	t.Logf("rdisc6:\n%s", out)
	for _, want := range []string{
		"Stateful address conf.    :          Yes",
		"Router lifetime           :         1800",
		"MTU                      :         1500",
		"Prefix                   : fd10:0:2::/120",
		"Recursive DNS server     : fd00::10",
		"DNS search list          : default.svc.cluster.local svc.cluster.local cluster.local",
		" from " + brLL.String(),
	} {
		require.Contains(t, out, want)
	}
	require.Contains(t, logs.String(), "router advertisements started")

	// DHCPv4 and DHCPv6, bound while the bridge had no carrier, lease
	// once it has.
	busybox := needBinary(t, "busybox", "busybox-static")
	dir := t.TempDir()
	udhcpc := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", writeScript(t, udhcpcScript), "-f", "-q", "-n", "-t", "5", "-T", "1")
	udhcpc.Env = append(os.Environ(), "OUT="+dir+"/env")
	b := &strings.Builder{}
	udhcpc.Stdout, udhcpc.Stderr = b, b
	require.NoError(t, run(vm, udhcpc), "udhcpc: %s", b)
	require.Equal(t, "10.0.2.2", readEnv(t, dir+"/env.bound")["ip"])
	require.Equal(t, "fd10:0:2::2", dhclient6(t, vm)["new_ip6_address"])
}

func mustMAC(t *testing.T, s string) []byte {
	t.Helper()
	hw, err := net.ParseMAC(s)
	require.NoError(t, err)
	return hw
}

// newTestLogger logs to the test and to w.
func newTestLogger(t testing.TB, w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.MultiWriter(w, tWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// childNetNSEnv makes the test binary serve as TestWithoutNetRaw's child.
const childNetNSEnv = "VIRTNET_DHCP_TEST_CHILD_NETNS"

// TestWithoutNetRaw runs the server in a child process whose bounding set
// lacks CAP_NET_RAW (setpriv), as v0.53's launcher runs: router
// advertisements cannot open their raw socket, which is logged once, and
// DHCPv4 (busybox udhcpc) and DHCPv6 (dhclient -6) still lease.
func TestWithoutNetRaw(t *testing.T) {
	if ns := os.Getenv(childNetNSEnv); ns != "" {
		serveWithoutNetRaw(t, ns)
		return
	}
	setpriv := needBinary(t, "setpriv", "util-linux")
	busybox := needBinary(t, "busybox", "busybox-static")
	needBinary(t, "dhclient", "isc-dhcp-client")
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, "52:54:00:12:34:56")
	vm := l.clients[0]
	linkLocal(t, l.pod, l.bridge) // the bridge has its address: only the capability is missing
	linkLocal(t, vm, "eth0")

	cmd := exec.Command(setpriv, "--bounding-set=-net_raw", "--inh-caps=-net_raw", "--",
		os.Args[0], "-test.run=^TestWithoutNetRaw$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childNetNSEnv+"="+l.pod.Path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	var out strings.Builder
	ready := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sc.Text() == "READY" {
				ready <- true
			}
		}
		ready <- false
	}()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		stdin.Close() // the child stops its server when its stdin ends
		<-done
		return cmd.Wait()
	}
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill() // the child started above, by its pid
			_ = stop()
		}
	})
	require.True(t, <-ready, "the server did not start without CAP_NET_RAW")

	dir := t.TempDir()
	udhcpc := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", writeScript(t, udhcpcScript), "-f", "-q", "-n", "-t", "5", "-T", "1")
	udhcpc.Env = append(os.Environ(), "OUT="+dir+"/env")
	b := &strings.Builder{}
	udhcpc.Stdout, udhcpc.Stderr = b, b
	require.NoError(t, run(vm, udhcpc), "udhcpc: %s", b)
	require.Equal(t, "10.0.2.2", readEnv(t, dir+"/env.bound")["ip"])
	require.Equal(t, "fd10:0:2::2", dhclient6(t, vm)["new_ip6_address"])

	require.NoError(t, stop())
	t.Logf("child:\n%s", out.String())
	require.Equal(t, 1, strings.Count(out.String(), "router advertisements disabled"))
}

// serveWithoutNetRaw is the child of TestWithoutNetRaw: it checks that
// raw sockets are refused, serves a dual-stack masquerade configuration in
// the namespace at nsPath, prints READY, and stops when stdin ends.
func serveWithoutNetRaw(t *testing.T, nsPath string) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6)
	if err == nil {
		unix.Close(fd)
	}
	require.ErrorIs(t, err, unix.EPERM, "the child must lack CAP_NET_RAW")
	rec := masqRecord()
	rec.MAC = cache.MustParseMAC("52:54:00:12:34:56")
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	s, err := NewServer(cfg, slog.New(slog.NewTextHandler(os.Stdout, nil)), WithNetNS(nsPath))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		require.NoError(t, err)
		require.Fail(t, "Serve returned before it was ready")
	}
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	cancel()
	require.NoError(t, <-done)
}
