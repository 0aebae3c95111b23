package dhcp

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/testutil"
)

// linkLocal waits until the link has a link-local IPv6 address that
// finished duplicate address detection and returns it.
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
// a masquerade-like bridge: the VM gets fd10:0:2::2 in an IA_NA with a
// 999-day lifetime, and a default route via the bridge's link-local
// address from the router advertisements.
func TestDHCPv6(t *testing.T) {
	dhclient := needBinary(t, "dhclient", "isc-dhcp-client")
	busybox := needBinary(t, "busybox", "busybox-static")
	l := newLab(t, []string{"10.0.2.1/24", "fd10:0:2::1/120"}, "52:54:00:12:34:56")
	vm := l.clients[0]
	brLL := linkLocal(t, l.pod, l.bridge)
	linkLocal(t, vm, "eth0")

	cfg, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(t, err)
	s, err := NewServer(cfg, testLogger(t), WithNetNS(l.pod.Path), WithRAInterval(time.Second))
	require.NoError(t, err)
	serve(t, s)

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
	env := readEnv(t, out+".BOUND6")
	for k, want := range map[string]string{
		"interface":          "eth0",
		"new_ip6_address":    "fd10:0:2::2",
		"new_max_life":       "86313600",
		"new_preferred_life": "86313600",
		// DUID-LL (type 3, hardware type 1) of the bridge's MAC, as
		// dhclient prints it.
		"new_dhcp6_server_id": dhclientHex(append([]byte{0, 3, 0, 1}, bridgeMAC(t, l)...)),
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
