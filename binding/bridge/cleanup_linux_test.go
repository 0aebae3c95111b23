package bridge_test

import (
	"context"
	"encoding"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// linkState is `ip addr show dev L` and `ip route show dev L` (main
// table, both families) as comparable lines: every address with its
// prefix, scope and flags (tentative ones waited out), every route with
// destination, gateway, source, metric, protocol, scope and type.
func linkState(t *testing.T, ns *testutil.NS, name string) []string {
	t.Helper()
	var out []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := ns.Handle.LinkByName(name)
		require.NoError(t, err)
		addrs, err := ns.Handle.AddrList(l, netlink.FAMILY_ALL)
		require.NoError(t, err)
		out = out[:0]
		tentative := false
		for _, a := range addrs {
			tentative = tentative || a.Flags&unix.IFA_F_TENTATIVE != 0
			out = append(out, fmt.Sprintf("addr %s scope %d flags %#x", a.IPNet, a.Scope, a.Flags))
		}
		if !tentative {
			break
		}
		require.True(t, time.Now().Before(deadline), "addresses of %s still tentative: %q", name, out)
		time.Sleep(50 * time.Millisecond)
	}
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	routes, err := ns.Handle.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{LinkIndex: l.Attrs().Index, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE)
	require.NoError(t, err)
	for _, r := range routes {
		out = append(out, fmt.Sprintf("route %v via %v src %v metric %d proto %d scope %d type %d", r.Dst, r.Gw, r.Src, r.Priority, r.Protocol, r.Scope, r.Type))
	}
	return out
}

// TestCleanupRestoresExactly runs the bridge binding's phase1 and Cleanup
// on pods made by the CNI reference plugins, with IPv6, and compares the
// pod link's addresses (with their flags) and routes before and after:
// they must be identical. ptp deletes the prefix route of each address
// (the kernel would add it back with the address); the bridge plugin's
// IPv6 address went through duplicate address detection (no nodad flag).
//
// In between, with the pod prepared, the pod's IPv6 (see requireIPv6Kept):
// the dummy eth0 holds the pod's addresses, the IPv6 one not tentative,
// and the record gives the VM the pod's IPv6 as a /128, the CNI's gateway,
// the gateway's link-local address (the node side's own) as its router,
// and the prefix on-link only where the pod had it (bridge plugin).
func TestCleanupRestoresExactly(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test of sequential phase1 and Cleanup calls on pods the CNI plugins (other processes) made; phase1 runs under -race on this kernel in phase1's and reliability's tests")
	files := cniPlugins(t)
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		Files: files, Env: []string{testutil.CNIPluginDirEnv}}) {
		return
	}
	dualPTP := testutil.NetworkSpec{Name: "dualptp", Plugin: "ptp", MTU: 1500,
		Subnets: []string{"10.244.6.0/24", "fd00:10:244:6::/64"}, DefaultRoute: true}
	for _, tc := range []struct {
		name string
		spec testutil.NetworkSpec
	}{
		{"ptp IPv6 only", testutil.IPv6Spec},
		{"ptp dual-stack", dualPTP},
		{"bridge plugin dual-stack", testutil.DualStackSpec},
		{"ptp IPv4 (kindnet)", testutil.KindnetSpec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := testutil.NewNS(t, "vn-node")
			pod := testutil.NewCNINetwork(t, node, tc.spec).AddPod(t)
			before := linkState(t, pod.Pod, "eth0")
			t.Logf("before:\n%s", strings.Join(before, "\n"))

			vmi, err := api.Load([]byte(podVMI))
			require.NoError(t, err)
			store, err := cache.New(t.TempDir())
			require.NoError(t, err)
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
			rec, err := store.ReadInterface(string(vmi.Metadata.UID), "default")
			require.NoError(t, err)
			requireIPv6Kept(t, pod, rec)
			require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
			// The link-local address comes back when the kernel sees
			// the carrier again, asynchronously: bounded polling.
			after := linkState(t, pod.Pod, "eth0")
			for i := 0; i < 100 && !slices.Equal(before, after); i++ {
				time.Sleep(100 * time.Millisecond)
				after = linkState(t, pod.Pod, "eth0")
			}
			require.Equal(t, before, after, "eth0 after Cleanup")
		})
	}
}

// requireIPv6Kept checks what phase1 did with a pod's IPv6 (nothing to
// check without): see TestCleanupRestoresExactly.
func requireIPv6Kept(t *testing.T, pod *testutil.Pod, rec *cache.Interface) {
	t.Helper()
	if pod.PodIPv6 == nil {
		require.Empty(t, rec.IPv6)
		return
	}
	ones, _ := pod.PodNetV6.Mask.Size()
	want := fmt.Sprintf("%s/%d", pod.PodIPv6, ones)
	dummy, err := pod.Pod.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.Equal(t, "dummy", dummy.Type())
	addrs, err := pod.Pod.Handle.AddrList(dummy, netlink.FAMILY_V6)
	require.NoError(t, err)
	var got []string
	for _, a := range addrs {
		if a.Scope == unix.RT_SCOPE_UNIVERSE {
			require.Zero(t, a.Flags&unix.IFA_F_TENTATIVE, "the pod's IPv6 on the dummy must not be tentative")
			got = append(got, a.IPNet.String())
		}
	}
	require.Equal(t, []string{want}, got, "the dummy eth0 keeps the pod's IPv6")

	require.Equal(t, pod.PodIPv6.String()+"/128", recText(rec.IPv6))
	require.Equal(t, pod.GatewayV6.String(), recText(rec.GatewayIPv6))
	// The router is the node side of the pod's network: the bridge
	// plugin's bridge, ptp's veth peer; its link-local address.
	side := pod.NodeLink
	if pod.Network.Spec.Plugin == "bridge" {
		side = pod.Network.Spec.Bridge
	}
	l, err := pod.Node.Handle.LinkByName(side)
	require.NoError(t, err)
	lls, err := pod.Node.Handle.AddrList(l, netlink.FAMILY_V6)
	require.NoError(t, err)
	var ll []string
	for _, a := range lls {
		if a.IP.IsLinkLocalUnicast() {
			ll = append(ll, a.IP.String())
		}
	}
	require.Contains(t, ll, rec.RouterIPv6.String(), "the router's link-local address (node side %s)", side)
	if pod.Network.Spec.Plugin == "bridge" {
		require.Equal(t, (&net.IPNet{IP: pod.PodIPv6.Mask(pod.PodNetV6.Mask), Mask: pod.PodNetV6.Mask}).String(), rec.OnLinkIPv6.String())
	} else {
		require.Empty(t, rec.OnLinkIPv6, "ptp routes its subnet through the gateway: nothing on-link")
	}
}

// recText is a record value as the record's JSON writes it ("" when unset).
func recText(v encoding.TextMarshaler) string {
	b, err := v.MarshalText()
	if err != nil {
		panic(err)
	}
	return string(b)
}
