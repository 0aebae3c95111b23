//go:build linux

package reliability_test

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/binding/passt"
	"github.com/virtnet/virtnet/macvtap/plugin"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// podMAC is the pod link's MAC in every test pod, so that the caches of
// runs in different namespaces compare byte for byte.
var podMAC = net.HardwareAddr{0x0a, 0x58, 0x0a, 0xf4, 0x01, 0x07}

// scenario is a binding and the pod the CNI leaves for it.
type scenario struct {
	name string
	yaml string
	pod  testutil.PodConfig
	// minCalls is the fewest mutating kernel calls a clean run makes
	// (the kill tests' guard against passing vacuously); 0 means 4.
	minCalls int
	// make, when set, makes the pod instead of newPod(pod).
	make func(tb testing.TB) *testutil.Pod
}

// newPod makes the scenario's pod.
func (sc scenario) newPod(tb testing.TB) *testutil.Pod {
	tb.Helper()
	if sc.make != nil {
		return sc.make(tb)
	}
	return newPod(tb, sc.pod)
}

// kernelScenarios are the bindings this kernel can run with a tap (no
// dummy: the bridge runs without IPAM).
var kernelScenarios = []scenario{
	{name: "masquerade", yaml: masqueradeVMI},
	{name: "bridge-no-ipam", yaml: bridgeVMI, pod: testutil.PodConfig{NoIPAM: true}},
}

// killScenarios are what the SIGKILL tests run on this kernel: the
// kernel scenarios and passt, whose phase1 only widens two sysctls
// (macvtap, which needs the kernel VM, is TestSIGKILLAtEveryStepMacvtap).
var killScenarios = append(slices.Clone(kernelScenarios),
	scenario{name: "passt", yaml: passtVMI, minCalls: 2})

// macvtapScenario is a macvtap network as the macvtap CNI plugin leaves
// it: net1, a macvtap on a dummy lower device of the node, with podMAC
// (the VMI asks for another MAC, which phase1 sets).
var macvtapScenario = scenario{name: "macvtap", yaml: macvtapVMI, minCalls: 1, make: newMacvtapPod}

func newMacvtapPod(tb testing.TB) *testutil.Pod {
	tb.Helper()
	node := testutil.NewNS(tb, "vn-node")
	pod := testutil.NewNS(tb, "vn-pod")
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = "lower0", 1500
	require.NoError(tb, node.Handle.LinkAdd(&netlink.Dummy{LinkAttrs: la}))
	lower, err := node.Handle.LinkByName("lower0")
	require.NoError(tb, err)
	require.NoError(tb, node.Handle.LinkSetUp(lower))
	p := &plugin.Plugin{HostNetNS: node.Path, Log: slog.New(slog.DiscardHandler)}
	conf := `{"cniVersion":"1.0.0","name":"macvtapnetwork","type":"macvtap","deviceID":"mvtap0","lowerDevice":"lower0","mtu":1480}`
	require.NoError(tb, p.Add(&skel.CmdArgs{ContainerID: "ctr-1", Netns: pod.Path, IfName: "net1",
		StdinData: []byte(conf), Args: "IgnoreUnknown=1;MAC=" + podMAC.String()}), "macvtap CNI ADD")
	return &testutil.Pod{Pod: pod, Node: node, PodLink: "net1", PodMAC: podMAC, MTU: 1480}
}

// newPod makes a pod namespace as the CNI leaves it, with podMAC on its
// pod link.
func newPod(tb testing.TB, cfg testutil.PodConfig) *testutil.Pod {
	tb.Helper()
	p := testutil.NewPodWith(tb, cfg)
	l, err := p.Pod.Handle.LinkByName(p.PodLink)
	require.NoError(tb, err)
	require.NoError(tb, p.Pod.Handle.LinkSetHardwareAddr(l, podMAC))
	return p
}

// kernelState lists what phase1 may change in a namespace: every link
// (type, master, flags, MTU, tap owner, learning; the MAC except for taps,
// whose MAC the kernel picks), its global addresses and IPv4 routes, the
// NAT tables and the sysctls phase1 sets.
func kernelState(tb testing.TB, nsPath string) []string {
	tb.Helper()
	d, err := kernel.Open(nsPath)
	require.NoError(tb, err)
	defer d.Close()
	links, err := d.LinkList()
	require.NoError(tb, err)
	var out []string
	for _, l := range links {
		mac := l.MAC.String()
		if l.Type == netdriver.TypeTuntap {
			mac = "(kernel's)"
		}
		learning := "-"
		if l.Master != "" {
			on, err := d.Learning(l.Name)
			require.NoError(tb, err)
			learning = fmt.Sprint(on)
		}
		out = append(out, fmt.Sprintf("link %s type=%s master=%q up=%v noarp=%v mtu=%d mac=%s tap=%d:%d mq=%v learning=%s altnames=%q",
			l.Name, l.Type, l.Master, l.Up, l.NoARP, l.MTU, mac, l.TapOwner, l.TapGroup, l.TapMultiQueue, learning, l.AltNames))
		for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
			addrs, err := d.AddrList(l.Name, fam)
			require.NoError(tb, err)
			for _, a := range addrs {
				out = append(out, fmt.Sprintf("addr %s %s", l.Name, a))
			}
		}
		routes, err := d.RouteList(l.Name, netdriver.IPv4)
		require.NoError(tb, err)
		for _, r := range routes {
			out = append(out, fmt.Sprintf("route %s %+v", l.Name, r))
		}
		if l.Type == netdriver.TypeBridge {
			v, err := d.Sysctl("ipv4/conf/" + l.Name + "/route_localnet")
			require.NoError(tb, err)
			out = append(out, "sysctl route_localnet "+l.Name+"="+v)
		}
	}
	for _, k := range []string{"ipv4/ip_forward", "ipv4/conf/all/arp_ignore", passt.PingGroupRangeKey, passt.UnprivilegedPortStartKey} {
		v, err := d.Sysctl(k)
		require.NoError(tb, err)
		out = append(out, "sysctl "+k+"="+v)
	}
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		rules, err := d.NATRules(fam)
		require.NoError(tb, err)
		for _, r := range rules {
			out = append(out, fmt.Sprintf("nat%d %s", fam, r))
		}
	}
	slices.Sort(out)
	return out
}

// linkNames lists the names of a namespace's links, sorted.
func linkNames(tb testing.TB, ns *testutil.NS) []string {
	tb.Helper()
	ls, err := ns.Handle.LinkList()
	require.NoError(tb, err)
	var out []string
	for _, l := range ls {
		out = append(out, l.Attrs().Name)
	}
	slices.Sort(out)
	return out
}
