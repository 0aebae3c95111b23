//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/kernelvm"
	"github.com/virtnet/virtnet/internal/kvplugin"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/internal/testutil"
)

// The test binary is also the plugins libcni runs: linked under the name
// virtnet-binding-cni it is this plugin, under podnet-result it is the
// network's CNI of the chain (it reports the pod link the test made, as
// the network's CNI would after making it).
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "virtnet-binding-cni":
		main()
		os.Exit(0)
	case "podnet-result":
		skel.PluginMainFuncs(skel.CNIFuncs{Add: podnetAdd, Del: func(*skel.CmdArgs) error { return nil }, Check: func(*skel.CmdArgs) error { return nil }},
			version.PluginSupports("1.0.0"), "podnet-result")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// podnetAdd reports CNI_IFNAME of CNI_NETNS with its addresses.
func podnetAdd(args *skel.CmdArgs) error {
	var res *current.Result
	err := nsexec.Do(args.Netns, func() error {
		l, err := netlink.LinkByName(args.IfName)
		if err != nil {
			return err
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return err
		}
		idx := 0
		res = &current.Result{CNIVersion: "1.0.0", Interfaces: []*current.Interface{{Name: args.IfName, Mac: l.Attrs().HardwareAddr.String(), Sandbox: args.Netns}}}
		for _, a := range addrs {
			if a.IP.IsGlobalUnicast() {
				res.IPs = append(res.IPs, &current.IPConfig{Interface: &idx, Address: *a.IPNet})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return types.PrintResult(res, "1.0.0")
}

type harness struct {
	cni      *libcni.CNIConfig
	cacheDir string
}

func newHarness(t *testing.T) *harness {
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	for _, n := range []string{"virtnet-binding-cni", "podnet-result"} {
		require.NoError(t, os.Symlink(self, filepath.Join(bin, n)))
	}
	return &harness{cni: libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil), cacheDir: t.TempDir()}
}

func (h *harness) list(t *testing.T, chained bool, plugin map[string]any) *libcni.NetworkConfigList {
	plugin["type"] = "virtnet-binding-cni"
	plugin["cacheDir"] = h.cacheDir
	plugin["logLevel"] = "warn"
	plugins := []any{plugin}
	if chained {
		plugins = []any{map[string]any{"type": "podnet-result"}, plugin}
	}
	b, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "podnet", "plugins": plugins})
	require.NoError(t, err)
	list, err := libcni.ConfListFromBytes(b)
	require.NoError(t, err)
	return list
}

func linkNames(t *testing.T, ns *testutil.NS) []string {
	links, err := ns.Handle.LinkList()
	require.NoError(t, err)
	var out []string
	for _, l := range links {
		out = append(out, l.Attrs().Name+"/"+l.Type())
	}
	return out
}

func cacheEntries(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out = append(out, strings.TrimPrefix(p, dir))
		}
		return err
	}))
	return out
}

func readPortStart(t *testing.T, ns *testutil.NS) string {
	var v []byte
	require.NoError(t, ns.Do(func() (err error) {
		v, err = os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
		return err
	}))
	return strings.TrimSpace(string(v))
}

// runLifecycle is ADD, CHECK, ADD again (idempotent), DEL, DEL again, ADD
// after DEL, DEL, on one pod through libcni; it checks the kernel, the
// hand-off record and the node-side records at each step.
func runLifecycle(t *testing.T, binding string, pod *testutil.Pod, chained bool) {
	h := newHarness(t)
	ctx := context.Background()
	plugin := map[string]any{"binding": binding}
	ifname := "eth0"
	if !chained {
		plugin["args"] = map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}
		ifname = "net1" // Multus names the binding attachment; the plugin works on eth0
	}
	list := h.list(t, chained, plugin)
	rt := &libcni.RuntimeConf{ContainerID: "ctr-" + binding, NetNS: pod.Pod.Path, IfName: ifname}
	before := linkNames(t, pod.Pod)

	res, err := h.cni.AddNetworkList(ctx, list, rt)
	require.NoError(t, err, "ADD")
	r, err := current.NewResultFromResult(res)
	require.NoError(t, err)
	if chained {
		require.Len(t, r.Interfaces, 1, "prevResult passes through")
		require.Equal(t, "eth0", r.Interfaces[0].Name)
	}
	src, err := kvplugin.ReadRecord(pod.Pod.Path, binding, "eth0")
	require.NoError(t, err, "hand-off record on tap0")
	rec := src.Record
	require.Equal(t, "tap0", src.Link)
	require.Equal(t, pod.MTU, rec.MTU)
	switch binding {
	case api.BindingMasquerade:
		require.Equal(t, "10.0.2.2/24", rec.IPv4)
		require.Equal(t, "10.0.2.1", rec.Gateway)
	case api.BindingBridge:
		require.Equal(t, pod.PodIP.String()+"/24", rec.IPv4)
		require.Equal(t, pod.Gateway.String(), rec.Gateway)
		require.Equal(t, pod.PodMAC.String(), rec.MAC, "the VM gets the pod's MAC")
		require.Equal(t, "eth0-nic", rec.NIC)
	}
	require.Equal(t, "67", readPortStart(t, pod.Pod), "the sidecar may bind the DHCP ports")
	tap, err := pod.Pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, 107, int(tap.(*netlink.Tuntap).Owner), "tap owned by qemu (107)")
	alias1 := tap.Attrs().Alias

	require.NoError(t, h.cni.CheckNetworkList(ctx, list, rt), "CHECK")
	_, err = h.cni.AddNetworkList(ctx, list, rt)
	require.NoError(t, err, "ADD again converges")
	tap, err = pod.Pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, alias1, tap.Attrs().Alias, "same record after a re-run")
	require.NoError(t, h.cni.CheckNetworkList(ctx, list, rt), "CHECK after ADD again")

	// A foreign alias on the tap: CHECK notices, the sidecar refuses it.
	require.NoError(t, pod.Pod.Handle.LinkSetAlias(tap, "someone else's"))
	require.Error(t, h.cni.CheckNetworkList(ctx, list, rt), "CHECK sees a foreign record")
	_, err = kvplugin.ReadRecord(pod.Pod.Path, binding, "eth0")
	require.ErrorIs(t, err, kvplugin.ErrForeignRecord)
	_, err = h.cni.AddNetworkList(ctx, list, rt)
	require.NoError(t, err, "ADD restores the record")
	require.NoError(t, h.cni.CheckNetworkList(ctx, list, rt))

	require.NoError(t, h.cni.DelNetworkList(ctx, list, rt), "DEL")
	require.ElementsMatch(t, before, linkNames(t, pod.Pod), "DEL returns the pod to how the CNI left it")
	require.Empty(t, cacheEntries(t, h.cacheDir), "DEL forgets the records")
	require.NoError(t, h.cni.DelNetworkList(ctx, list, rt), "DEL again")
	require.Error(t, h.cni.CheckNetworkList(ctx, list, rt), "CHECK after DEL fails")

	_, err = h.cni.AddNetworkList(ctx, list, rt)
	require.NoError(t, err, "ADD after DEL")
	_, err = kvplugin.ReadRecord(pod.Pod.Path, binding, "eth0")
	require.NoError(t, err)
	require.NoError(t, h.cni.DelNetworkList(ctx, list, rt))
	require.ElementsMatch(t, before, linkNames(t, pod.Pod))

	other := *rt
	other.ContainerID = "never-added"
	require.NoError(t, h.cni.DelNetworkList(ctx, list, &other), "DEL without ADD")
	gone := other
	gone.NetNS = filepath.Join(t.TempDir(), "gone")
	require.NoError(t, h.cni.DelNetworkList(ctx, list, &gone), "DEL without namespace")
}

// TestMasqueradeThroughLibcni runs the masquerade plugin chained after the
// network's CNI, and as KubeVirt's binding attachment (logicNetworkName).
func TestMasqueradeThroughLibcni(t *testing.T) {
	testutil.RequireRoot(t)
	for _, chained := range []bool{true, false} {
		t.Run(fmt.Sprintf("chained=%v", chained), func(t *testing.T) {
			runLifecycle(t, api.BindingMasquerade, testutil.NewPod(t), chained)
		})
	}
}

// TestBridgeThroughLibcniInVM runs the bridge plugin (dummy in the pod
// link's place: inside the kernel VM here).
func TestBridgeThroughLibcniInVM(t *testing.T) {
	if kernelvm.Delegate(t, "dummy", "bridge", "veth", "tun") {
		return
	}
	testutil.RequireRoot(t)
	for _, chained := range []bool{true, false} {
		t.Run(fmt.Sprintf("chained=%v", chained), func(t *testing.T) {
			runLifecycle(t, api.BindingBridge, testutil.NewPod(t), chained)
		})
	}
	t.Run("secondary", secondaryNetworkPodHash)
}

// secondaryNetworkPodHash: as KubeVirt's binding attachment for a Multus
// network, the plugin works on pod<hash of the network name>.
func secondaryNetworkPodHash(t *testing.T) {
	podIface := api.HashedPodInterface("blue")
	pod := testutil.NewPodWith(t, testutil.PodConfig{Link: podIface})
	h := newHarness(t)
	list := h.list(t, false, map[string]any{"binding": "bridge", "args": map[string]any{"cni": map[string]any{"logicNetworkName": "blue"}}})
	rt := &libcni.RuntimeConf{ContainerID: "ctr-blue", NetNS: pod.Pod.Path, IfName: "net1"}
	_, err := h.cni.AddNetworkList(context.Background(), list, rt)
	require.NoError(t, err)
	src, err := kvplugin.ReadRecord(pod.Pod.Path, "bridge", podIface)
	require.NoError(t, err)
	require.Equal(t, names.Bridge(podIface), src.Record.Bridge)
	require.Equal(t, names.Tap(podIface), src.Link)
	require.NoError(t, h.cni.CheckNetworkList(context.Background(), list, rt))
	require.NoError(t, h.cni.DelNetworkList(context.Background(), list, rt))
}

// TestErrors: bad configurations and arguments are CNI errors with the
// spec's codes, and nothing changes in the pod.
func TestErrors(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	before := linkNames(t, pod.Pod)
	h := newHarness(t)
	for _, tc := range []struct {
		name    string
		plugin  map[string]any
		chained bool
		ifname  string
		code    uint
	}{
		{"unknown binding", map[string]any{"binding": "sriov"}, true, "eth0", types.ErrInvalidNetworkConfig},
		{"no binding", map[string]any{}, true, "eth0", types.ErrInvalidNetworkConfig},
		{"ports on bridge", map[string]any{"binding": "bridge", "ports": []map[string]any{{"port": 80}}}, true, "eth0", types.ErrInvalidNetworkConfig},
		{"bad port", map[string]any{"binding": "masquerade", "ports": []map[string]any{{"port": 70000}}}, true, "eth0", types.ErrInvalidNetworkConfig},
		{"neither chained nor logicNetworkName", map[string]any{"binding": "masquerade"}, false, "net1", types.ErrInvalidNetworkConfig},
		{"unexpected pod interface", map[string]any{"binding": "masquerade"}, true, "net7", types.ErrInvalidEnvironmentVariables},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := h.list(t, tc.chained, tc.plugin)
			rt := &libcni.RuntimeConf{ContainerID: "ctr-err", NetNS: pod.Pod.Path, IfName: tc.ifname}
			if tc.ifname == "net7" {
				testutil.AddVeth(t, pod.Node, "peer7", pod.Pod, "net7", 1500)
				before = linkNames(t, pod.Pod)
			}
			_, err := h.cni.AddNetworkList(context.Background(), list, rt)
			require.Error(t, err)
			var te *types.Error
			require.ErrorAs(t, err, &te)
			require.Equal(t, tc.code, te.Code, "%v", err)
			require.ElementsMatch(t, before, linkNames(t, pod.Pod))
		})
	}
}
