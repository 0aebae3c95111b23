package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/kernelvm"
	"github.com/virtnet/virtnet/internal/testutil"
	"github.com/virtnet/virtnet/phase1"
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
func TestCleanupRestoresExactly(t *testing.T) {
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
		{"ptp IPv6 only (layer 2)", testutil.IPv6Spec},
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
