//go:build linux

package main

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"net/netip"
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
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
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

// runDir is a directory under /run (where cacheDir must be) that is
// removed when the test ends.
func runDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/run", "virtnet-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "cache")
}

type harness struct {
	cni      *libcni.CNIConfig
	cacheDir string
	node     *testutil.NS
}

// newHarness runs libcni with the reference plugins (the network's CNI,
// built by testutil.CNIPluginDir) and this test binary as
// virtnet-binding-cni and podnet-result, from inside node.
func newHarness(t *testing.T, node *testutil.NS) *harness {
	self, err := os.Executable()
	require.NoError(t, err)
	bin := t.TempDir()
	for _, n := range []string{"virtnet-binding-cni", "podnet-result"} {
		require.NoError(t, os.Symlink(self, filepath.Join(bin, n)))
	}
	return &harness{cni: libcni.NewCNIConfigWithCacheDir([]string{bin, testutil.CNIPluginDir(t)}, t.TempDir(), nil),
		cacheDir: runDir(t), node: node}
}

// list is plugin after the plugins of network (a conflist as
// {"plugins": [...]}), or plugin alone when network is nil.
func (h *harness) list(t *testing.T, network []byte, plugin map[string]any) *libcni.NetworkConfigList {
	plugin["type"] = "virtnet-binding-cni"
	plugin["cacheDir"] = h.cacheDir
	plugin["logLevel"] = "warn"
	conf := map[string]any{"cniVersion": "1.0.0", "name": "podnet", "plugins": []any{plugin}}
	if network != nil {
		require.NoError(t, json.Unmarshal(network, &conf))
		conf["plugins"] = append(conf["plugins"].([]any), plugin)
	}
	b, err := json.Marshal(conf)
	require.NoError(t, err)
	list, err := libcni.ConfListFromBytes(b)
	require.NoError(t, err)
	return list
}

func (h *harness) add(list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) (res types.Result, err error) {
	err = h.node.Do(func() error {
		res, err = h.cni.AddNetworkList(context.Background(), list, rt)
		return err
	})
	return res, err
}

func (h *harness) check(list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	return h.node.Do(func() error { return h.cni.CheckNetworkList(context.Background(), list, rt) })
}

func (h *harness) del(list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) error {
	return h.node.Do(func() error { return h.cni.DelNetworkList(context.Background(), list, rt) })
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

// podLink is what the network's CNI reported for the pod link.
type podLink struct {
	mac     string
	addr    string
	gateway string
}

func podLinkOf(t *testing.T, res types.Result, netns string) podLink {
	r, err := current.NewResultFromResult(res)
	require.NoError(t, err)
	var pl podLink
	for i, itf := range r.Interfaces {
		if itf.Sandbox == netns && itf.Name == "eth0" {
			pl.mac = itf.Mac
			for _, ip := range r.IPs {
				if ip.Interface != nil && *ip.Interface == i && ip.Address.IP.To4() != nil {
					pl.addr, pl.gateway = ip.Address.String(), ip.Gateway.String()
				}
			}
		}
	}
	require.NotEmpty(t, pl.mac, "the result names the pod's eth0: %+v", r)
	return pl
}

// runLifecycle is ADD, CHECK, ADD again (idempotent), a foreign alias
// repaired by ADD, DEL, DEL again, ADD after DEL, DEL, DEL without ADD and
// without namespace, through libcni on a pod the network's CNI (spec)
// makes: chained in one conflist after the network's plugins, or as
// KubeVirt's separate binding attachment (logicNetworkName, CNI_IFNAME
// net1) on a pod the network made before. It checks the kernel, the
// hand-off record and the node-side records at each step.
func runLifecycle(t *testing.T, binding string, spec testutil.NetworkSpec, chained bool) {
	node := testutil.NewNS(t, "vn-node")
	h := newHarness(t, node)
	network := testutil.NewCNINetwork(t, node, spec)
	plugin := map[string]any{"binding": binding}
	var (
		list   *libcni.NetworkConfigList
		rt     *libcni.RuntimeConf
		pod    *testutil.NS
		before []string // the pod's links after DEL
		pl     podLink
	)
	if chained {
		pod = testutil.NewNS(t, "vn-pod")
		list = h.list(t, network.ConfList, plugin)
		rt = &libcni.RuntimeConf{ContainerID: "ctr-" + binding, NetNS: pod.Path, IfName: "eth0"}
		before = linkNames(t, pod) // lo: DEL of the chain removes the pod link too
	} else {
		p := network.AddPod(t)
		pod = p.Pod
		plugin["args"] = map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}
		list = h.list(t, nil, plugin)
		rt = &libcni.RuntimeConf{ContainerID: p.ContainerID, NetNS: pod.Path, IfName: "net1"}
		before = linkNames(t, pod)
		pl = podLinkOf(t, p.Result, pod.Path)
	}

	res, err := h.add(list, rt)
	require.NoError(t, err, "ADD")
	if chained {
		pl = podLinkOf(t, res, pod.Path) // prevResult passed through
	}
	src, err := kvplugin.ReadRecord(pod.Path, binding, "eth0", true)
	require.NoError(t, err, "hand-off record on tap0")
	rec := src.Record
	require.Equal(t, "tap0", src.Link)
	require.Equal(t, spec.MTU, rec.MTU)
	switch binding {
	case api.BindingMasquerade:
		require.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), rec.IPv4)
		require.Equal(t, netip.MustParseAddr("10.0.2.1"), rec.Gateway)
	case api.BindingBridge:
		// The address as the kernel holds it: ptp reports /24 in its
		// result but assigns /32.
		require.Equal(t, strings.Split(pl.addr, "/")[0], rec.IPv4.Addr().String())
		require.Equal(t, pl.gateway, rec.Gateway.String())
		require.Equal(t, pl.mac, rec.MAC.String(), "the VM gets the pod's MAC")
		require.Equal(t, "eth0-nic", rec.NIC)
	}
	require.Equal(t, "67", readPortStart(t, pod), "the sidecar may bind the DHCP ports")
	tap, err := pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, 107, int(tap.(*netlink.Tuntap).Owner), "tap owned by qemu (107)")
	alias1 := tap.Attrs().Alias

	// ADD of this plugin again: chained, the network's plugins would not
	// take a second ADD, so it runs as KubeVirt's attachment for the same
	// interface (same records: the pod network is "default" both ways).
	againList, againRT := list, rt
	if chained {
		againList = h.list(t, nil, map[string]any{"binding": binding, "args": map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}})
		againRT = &libcni.RuntimeConf{ContainerID: rt.ContainerID, NetNS: rt.NetNS, IfName: "net1"}
	}
	// CHECK of the chain: the bridge binding moves the pod link (eth0
	// becomes a dummy), which the network's own CHECK then reports
	// (as it would for KubeVirt's core bridge binding); this plugin's
	// CHECK runs alone there.
	checkList, checkRT := list, rt
	if binding == api.BindingBridge {
		checkList, checkRT = againList, againRT
	}
	require.NoError(t, h.check(checkList, checkRT), "CHECK")
	_, err = h.add(againList, againRT)
	require.NoError(t, err, "ADD again converges")
	tap, err = pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, alias1, tap.Attrs().Alias, "same record after a re-run")
	require.NoError(t, h.check(checkList, checkRT), "CHECK after ADD again")

	// A foreign alias on the tap: CHECK notices, the sidecar refuses it.
	require.NoError(t, pod.Handle.LinkSetAlias(tap, "someone else's"))
	require.Error(t, h.check(checkList, checkRT), "CHECK sees a foreign record")
	_, err = kvplugin.ReadRecord(pod.Path, binding, "eth0", true)
	require.ErrorIs(t, err, kvplugin.ErrForeignRecord)
	_, err = h.add(againList, againRT)
	require.NoError(t, err, "ADD restores the record")
	require.NoError(t, h.check(checkList, checkRT))

	require.NoError(t, h.del(list, rt), "DEL")
	require.ElementsMatch(t, before, linkNames(t, pod), "DEL returns the pod to how the CNI left it")
	require.Empty(t, cacheEntries(t, h.cacheDir), "DEL forgets the records")
	require.NoError(t, h.del(list, rt), "DEL again")
	require.Error(t, h.check(checkList, checkRT), "CHECK after DEL fails")

	_, err = h.add(list, rt)
	require.NoError(t, err, "ADD after DEL")
	_, err = kvplugin.ReadRecord(pod.Path, binding, "eth0", true)
	require.NoError(t, err)
	require.NoError(t, h.check(checkList, checkRT))
	require.NoError(t, h.del(list, rt))
	require.ElementsMatch(t, before, linkNames(t, pod))

	other := *rt
	other.ContainerID = "never-added"
	require.NoError(t, h.del(list, &other), "DEL without ADD")
	gone := other
	gone.NetNS = filepath.Join(t.TempDir(), "gone")
	require.NoError(t, h.del(list, &gone), "DEL without namespace")
}

// TestMasqueradeThroughLibcni runs the masquerade plugin chained after the
// network's CNI and as KubeVirt's binding attachment, on pods made by the
// bridge plugin (flannel's shape) and by ptp (kindnet's).
func TestMasqueradeThroughLibcni(t *testing.T) {
	testutil.RequireRoot(t)
	for _, spec := range []testutil.NetworkSpec{testutil.FlannelSpec, testutil.KindnetSpec} {
		for _, chained := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/chained=%v", spec.Name, chained), func(t *testing.T) {
				runLifecycle(t, api.BindingMasquerade, spec, chained)
			})
		}
	}
}

// cniPlugins builds the CNI reference plugins outside the kernel VM and
// returns them as kernelvm files at the same paths, with
// testutil.CNIPluginDirEnv naming that directory in the VM as here.
func cniPlugins(t *testing.T) map[string]string {
	if os.Getenv(kernelvm.EnvInVM) == "1" {
		return nil
	}
	testutil.RequireRoot(t)
	dir := testutil.CNIPluginDir(t)
	t.Setenv(testutil.CNIPluginDirEnv, dir)
	files := map[string]string{}
	for _, p := range testutil.CNIPlugins() {
		files[filepath.Join(dir, p)] = filepath.Join(dir, p)
	}
	return files
}

// TestBridgeThroughLibcniInVM runs the bridge plugin (a dummy takes the
// pod link's place: inside the kernel VM here) on flannel- and
// kindnet-shaped pods, chained and as KubeVirt's attachment, and on a
// Multus secondary network's pod<hash> link.
func TestBridgeThroughLibcniInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test; the same plugin path through libcni runs under -race on this kernel in TestMasqueradeThroughLibcni")
	files := cniPlugins(t)
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		Files: files, Env: []string{testutil.CNIPluginDirEnv},
		// RDRAND (emulated by TCG) seeds the guest kernel's
		// random pool at boot: the reference plugins read crypto/rand,
		// which otherwise blocks on a loaded host.
		QEMUArgs: []string{"-cpu", "qemu64,+rdrand"}}) {
		return
	}
	testutil.RequireRoot(t)
	for _, spec := range []testutil.NetworkSpec{testutil.FlannelSpec, testutil.KindnetSpec} {
		for _, chained := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/chained=%v", spec.Name, chained), func(t *testing.T) {
				runLifecycle(t, api.BindingBridge, spec, chained)
			})
		}
	}
	t.Run("secondary", secondaryNetworkPodHash)
}

// secondaryNetworkPodHash: as KubeVirt's binding attachment for a Multus
// network, the plugin works on pod<hash of the network name>.
func secondaryNetworkPodHash(t *testing.T) {
	node := testutil.NewNS(t, "vn-node")
	primary := testutil.NewCNINetwork(t, node, testutil.FlannelSpec)
	secondary := testutil.NewCNINetwork(t, node, testutil.SecondarySpec)
	p := primary.AddPod(t)
	podIface := api.HashedPodInterface("blue")
	att := secondary.AttachSecondary(t, p, podIface)
	h := newHarness(t, node)
	list := h.list(t, nil, map[string]any{"binding": "bridge", "args": map[string]any{"cni": map[string]any{"logicNetworkName": "blue"}}})
	rt := &libcni.RuntimeConf{ContainerID: p.ContainerID, NetNS: p.Pod.Path, IfName: "net2"}
	_, err := h.add(list, rt)
	require.NoError(t, err)
	src, err := kvplugin.ReadRecord(p.Pod.Path, "bridge", podIface, false)
	require.NoError(t, err)
	require.Equal(t, names.Bridge(podIface), src.Record.Bridge)
	require.Equal(t, "k6t-16477688c0e", src.Record.Bridge, "KubeVirt v1.9.0's name")
	require.Equal(t, names.Tap(podIface, false), src.Link)
	// A pod a pre-v0.1.0 CNI plugin of virtnet prepared has its bridge under
	// that release's name: the sidecar's reading finds it there.
	br, err := p.Pod.Handle.LinkByName(src.Record.Bridge)
	require.NoError(t, err)
	require.NoError(t, p.Pod.Handle.LinkSetDown(br))
	require.NoError(t, p.Pod.Handle.LinkSetName(br, names.LegacyBridge(podIface)))
	old, err := kvplugin.ReadRecord(p.Pod.Path, "bridge", podIface, false)
	require.NoError(t, err)
	require.Equal(t, "k6t-58d19be530f", old.Record.Bridge)
	require.NoError(t, p.Pod.Handle.LinkSetName(br, src.Record.Bridge))
	require.NoError(t, p.Pod.Handle.LinkSetUp(br))
	require.Equal(t, att.IPs[0].String(), recText(src.Record.IPv4))
	require.Equal(t, att.MAC.String(), recText(src.Record.MAC))
	_, err = kvplugin.ReadRecord(p.Pod.Path, "bridge", "eth0", true)
	require.ErrorIs(t, err, kvplugin.ErrNoLink, "the pod network's eth0 is left alone")

	// A second virtnet-bridge interface in the same pod is refused (each
	// bridge would take 169.254.75.10), and leaves eth0 as it was.
	before := linkNames(t, p.Pod)
	second := h.list(t, nil, map[string]any{"binding": "bridge", "args": map[string]any{"cni": map[string]any{"logicNetworkName": "default"}}})
	_, err = h.add(second, &libcni.RuntimeConf{ContainerID: p.ContainerID, NetNS: p.Pod.Path, IfName: "net3"})
	var te *types.Error
	require.ErrorAs(t, err, &te)
	require.Contains(t, te.Msg, "169.254.75.10")
	require.ElementsMatch(t, before, linkNames(t, p.Pod))
	require.NoError(t, h.check(list, rt))
	require.NoError(t, h.del(list, rt))
}

// TestErrors: bad configurations and arguments are CNI errors with the
// spec's codes, and nothing changes in the pod.
func TestErrors(t *testing.T) {
	testutil.RequireRoot(t)
	node := testutil.NewNS(t, "vn-node")
	pod := testutil.NewCNINetwork(t, node, testutil.FlannelSpec).AddPod(t)
	before := linkNames(t, pod.Pod)
	h := newHarness(t, node)
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
		{"bad tapOwner", map[string]any{"binding": "masquerade", "tapOwner": -3}, true, "eth0", types.ErrInvalidNetworkConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var network []byte
			if tc.chained {
				network = []byte(`{"plugins": [{"type": "podnet-result"}]}`)
			}
			list := h.list(t, network, tc.plugin)
			rt := &libcni.RuntimeConf{ContainerID: "ctr-err", NetNS: pod.Pod.Path, IfName: tc.ifname}
			if tc.ifname == "net7" {
				testutil.AddVeth(t, pod.Node, "peer7", pod.Pod, "net7", 1500)
				before = linkNames(t, pod.Pod)
			}
			_, err := h.add(list, rt)
			require.Error(t, err)
			var te *types.Error
			require.ErrorAs(t, err, &te)
			require.Equal(t, tc.code, te.Code, "%v", err)
			require.ElementsMatch(t, before, linkNames(t, pod.Pod))
		})
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
