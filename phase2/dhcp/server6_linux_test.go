package dhcp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/mdlayher/ndp"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// linkLocal waits until the link has a link-local IPv6 address that
// finished duplicate address detection and returns it.
// zone names link name of namespace ns as a numeric IPv6 zone (its
// ifindex). A zone given by name goes through the Go runtime's
// process-wide name-to-index cache, which one test process shares between
// all its namespaces: "eth0" of an earlier namespace would be bound.
func zone(t *testing.T, ns *testutil.NS, name string) string {
	t.Helper()
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	return strconv.Itoa(l.Attrs().Index)
}

func linkLocal(t *testing.T, ns *testutil.NS, name string) net.IP {
	t.Helper()
	var ll net.IP
	require.NoError(t, poll(100, func() error {
		l, err := ns.Handle.LinkByName(name)
		if err != nil {
			return err
		}
		addrs, err := ns.Handle.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
				ll = a.IP
				return nil
			}
		}
		return fmt.Errorf("%s: no usable link-local address yet: %w", name, errNotYet)
	}))
	return ll
}

// TestDHCPv6 runs ISC dhclient -6 in a VM namespace against the server on
// a masquerade-like bridge that answers only the VM's MAC: the VM gets
// fd10:0:2::2 in an IA_NA with a 999-day lifetime, the pod's IPv6
// nameservers and search list (options 23 and 24), and a default route via
// the bridge's link-local address from the router advertisements.
func TestDHCPv6(t *testing.T) {
	needBinary(t, "dhclient", "isc-dhcp-client")
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, "52:54:00:12:34:56")
	vm := l.clients[0]
	brLL := linkLocal(t, l.pod, l.bridge)
	linkLocal(t, vm, "eth0")

	rec := masqRecord()
	rec.MAC = cache.MustParseMAC("52:54:00:12:34:56")
	resolv := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver fd00:10:96::a\nnameserver 10.96.0.10\nnameserver fd00:10:96::b\n"
	cfg, err := NewConfig(testVMI(), nil, rec, []byte(resolv))
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path), withRAInterval(time.Second))
	require.NoError(t, err)
	serve(t, s)

	env := dhclient6(t, vm)
	for k, want := range map[string]string{
		"interface":          "eth0",
		"new_ip6_address":    "fd10:0:2::2",
		"new_max_life":       "86313600",
		"new_preferred_life": "86313600",
		// DUID-LL (type 3, hardware type 1) of the bridge's MAC, as
		// dhclient prints it.
		"new_dhcp6_server_id": dhclientHex(append([]byte{0, 3, 0, 1}, bridgeMAC(t, l)...)),
		// Options 23 and 24: the pod's IPv6 nameservers, in order, and its
		// search list.
		"new_dhcp6_name_servers":  "fd00:10:96::a fd00:10:96::b",
		"new_dhcp6_domain_search": "default.svc.cluster.local. svc.cluster.local. cluster.local.",
	} {
		require.Equal(t, want, env[k], "dhclient variable %s", k)
	}

	// The address is on the VM's interface.
	eth0, err := vm.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.NoError(t, poll(50, func() error {
		addrs, err := vm.Handle.AddrList(eth0, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if a.IP.Equal(net.ParseIP("fd10:0:2::2")) {
				return nil
			}
		}
		return fmt.Errorf("fd10:0:2::2 not on eth0: %v: %w", addrs, errNotYet)
	}))

	// Router advertisements gave the VM a default route via the bridge's
	// link-local address.
	require.NoError(t, poll(100, func() error {
		routes, err := vm.Handle.RouteList(eth0, netlink.FAMILY_V6)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if (r.Dst == nil || r.Dst.IP.IsUnspecified() && mustOnes(r.Dst) == 0) && r.Gw.Equal(brLL) {
				return nil
			}
		}
		return fmt.Errorf("no default route via %s: %v: %w", brLL, routes, errNotYet)
	}))
}

// dhclient6 runs ISC dhclient -6 on eth0 of ns until it binds (bounded)
// and returns the environment of its BOUND6 event; the script adds the
// address to eth0. dhclient is killed when the test ends.
func dhclient6(t *testing.T, vm *testutil.NS) map[string]string {
	t.Helper()
	dhclient := needBinary(t, "dhclient", "isc-dhcp-client")
	busybox := needBinary(t, "busybox", "busybox-static")
	dir := t.TempDir()
	out := dir + "/env"
	script := writeScript(t, fmt.Sprintf(`#!/bin/sh
env > %[1]s.tmp && mv %[1]s.tmp "%[1]s.$reason"
case "$reason" in BOUND6|REBOOT6)
	%[2]s ip -6 addr add "$new_ip6_address/$new_ip6_prefixlen" dev "$interface" ;;
esac
exit 0
`, out, busybox))
	require.NoError(t, os.WriteFile(dir+"/dhclient.conf", nil, 0o644))
	cmd := exec.Command(dhclient, "-6", "-d", "-v", "-cf", dir+"/dhclient.conf", "-lf", dir+"/leases",
		"-pf", dir+"/pid", "-sf", script, "eth0")
	logb := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logb, logb
	require.NoError(t, vm.Do(cmd.Start))
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // the dhclient started above, by its pid
		_ = cmd.Wait()
		t.Logf("dhclient:\n%s", logb)
	})

	require.NoError(t, poll(300, func() error {
		if _, err := os.Stat(out + ".BOUND6"); err != nil {
			return err
		}
		return nil
	}), "dhclient did not bind")
	return readEnv(t, out+".BOUND6")
}

func mustOnes(n *net.IPNet) int {
	o, _ := n.Mask.Size()
	return o
}

func bridgeMAC(t *testing.T, l *lab) net.HardwareAddr {
	br, err := l.pod.Handle.LinkByName(l.bridge)
	require.NoError(t, err)
	return br.Attrs().HardwareAddr
}

// dhclientHex formats bytes as dhclient's environment does: "0:3:0:1:a:…".
func dhclientHex(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = fmt.Sprintf("%x", x)
	}
	return strings.Join(parts, ":")
}

// TestDHCPv6ForeignClient: a second client on the bridge, with its own MAC,
// gets no Advertise, whether its DUID is a DUID-LLT of its MAC or a
// DUID-UUID (then its EUI-64 link-local source gives it away); the same
// Solicits sent by the VM are answered, so the silence is the filter's.
func TestDHCPv6ForeignClient(t *testing.T) {
	vmMAC, otherMAC := "52:54:00:12:34:56", "52:54:00:99:99:99"
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, vmMAC, otherMAC)
	linkLocal(t, l.pod, l.bridge)
	rec := masqRecord()
	rec.MAC = cache.MustParseMAC(vmMAC)
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, s)

	for i, client := range l.clients {
		mac, err := net.ParseMAC([]string{vmMAC, otherMAC}[i])
		require.NoError(t, err)
		src := linkLocal(t, client, "eth0")
		for _, duid := range []dhcpv6.DUID{
			&dhcpv6.DUIDLLT{HWType: iana.HWTypeEthernet, Time: 7, LinkLayerAddr: mac},
			&dhcpv6.DUIDUUID{UUID: [16]byte{byte(i), 1, 2, 3}},
		} {
			if i == 0 { // a few tries: one Solicit may be lost on a loaded machine
				require.NoError(t, poll(5, func() error {
					got, err := solicit(t, client, src, duid)
					if err == nil && got != dhcpv6.MessageTypeAdvertise {
						err = fmt.Errorf("the VM (%s) must be answered, got %v: %w", duid, got, errNotYet)
					}
					return err
				}))
			} else {
				got, err := solicit(t, client, src, duid)
				require.NoError(t, err)
				require.Zero(t, got, "a foreign client (%s) must get no reply", duid)
			}
		}
	}
}

// solicit sends one Solicit with the DUID from src on eth0 of ns and
// returns the type of the reply, or 0 when none came within 2s.
func solicit(t *testing.T, ns *testutil.NS, src net.IP, duid dhcpv6.DUID) (dhcpv6.MessageType, error) {
	var got dhcpv6.MessageType
	eth0 := zone(t, ns, "eth0")
	err := ns.Do(func() error {
		c, err := net.ListenPacket("udp6", "["+src.String()+"%"+eth0+"]:546")
		if err != nil {
			return err
		}
		defer c.Close()
		sol, err := dhcpv6.NewSolicit(net.HardwareAddr{2, 0, 0, 0, 0, 1}, dhcpv6.WithClientID(duid))
		if err != nil {
			return err
		}
		sol.Options.Del(dhcpv6.OptionRapidCommit)
		if _, err := c.WriteTo(sol.ToBytes(), &net.UDPAddr{IP: net.ParseIP("ff02::1:2"), Port: 547, Zone: eth0}); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		for {
			n, _, err := c.ReadFrom(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			if err != nil {
				return err
			}
			if m, err := dhcpv6.MessageFromBytes(buf[:n]); err == nil && m.TransactionID == sol.TransactionID {
				got = m.MessageType
				return nil
			}
		}
	})
	return got, err
}

// TestDHCPv6NeighborEntry: a VM whose DUID is a DUID-UUID and whose
// link-local address is not EUI-64 (NetworkManager's defaults) is not
// recognised while the pod namespace does not forward; once it forwards
// (as masquerade sets it) a router solicitation with the client's MAC (the
// kernel sends one when the address comes up, and such clients wait for a
// router advertisement before DHCPv6) leaves its neighbour entry, and the
// server answers it.
func TestDHCPv6NeighborEntry(t *testing.T) {
	vmMAC := "52:54:00:12:34:56"
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, vmMAC)
	linkLocal(t, l.pod, l.bridge)
	vm := l.clients[0]
	eth0, err := vm.Handle.LinkByName("eth0")
	require.NoError(t, err)
	priv := netip.MustParseAddr("fe80::1c2d:3e4f:5a6b:7c8d")
	addr, err := netlink.ParseAddr(priv.String() + "/64")
	require.NoError(t, err)
	addr.Flags = unix.IFA_F_NODAD
	require.NoError(t, vm.Handle.AddrAdd(eth0, addr))

	rec := masqRecord()
	rec.MAC = cache.MustParseMAC(vmMAC)
	cfg, err := NewConfig(testVMI(), nil, rec, nil)
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path))
	require.NoError(t, err)
	serve(t, s)

	duid := &dhcpv6.DUIDUUID{UUID: [16]byte{9, 8, 7}}
	got, err := solicit(t, vm, priv.AsSlice(), duid)
	require.NoError(t, err)
	require.Zero(t, got, "nothing ties this client to the VM's MAC yet: the pod does not forward, it ignored the solicitation the VM's kernel sent")

	// Masquerade makes the pod namespace a router; the solicitation a
	// client sends then leaves its MAC in the neighbour table.
	require.NoError(t, l.pod.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0o644)
	}))

	require.NoError(t, vm.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		c, _, err := ndp.Listen(byIndex(ifi), ndp.Addr(priv.String()))
		if err != nil {
			return err
		}
		defer c.Close()
		rs := &ndp.RouterSolicitation{Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}}}
		return c.WriteTo(rs, nil, netip.MustParseAddr("ff02::2"))
	}))
	require.NoError(t, poll(50, func() error {
		got, err := solicit(t, vm, priv.AsSlice(), duid)
		if err != nil {
			return err
		}
		if got != dhcpv6.MessageTypeAdvertise {
			return fmt.Errorf("reply %v: %w", got, errNotYet)
		}
		return nil
	}))
}
