package dhcp

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/testutil"
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
// (RDNSS) and search list (DNSSL).
func TestRouterAdvertisementsAfterCarrier(t *testing.T) {
	rdisc6 := needBinary(t, "rdisc6", "ndisc6")
	l, plugIn := noCarrierLab(t)
	require.Empty(t, linkLocals(t, l.pod, l.bridge), "the bridge must have no link-local address before the carrier")

	rec := masqRecord()
	rec.MAC = "52:54:00:12:34:56"
	cfg, err := NewConfig(testVMI(), nil, rec, []byte(podResolvConf))
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := NewServer(cfg, newTestLogger(t, logs), WithNetNS(l.pod.Path), WithRAInterval(time.Second))
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
