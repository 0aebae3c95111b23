package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// cniTimeout bounds one CNI ADD or DEL (the plugins wait for IPv6
// duplicate address detection, up to 10 s).
const cniTimeout = time.Minute

// NetworkSpec is a CNI network made by the reference plugins: the bridge
// or ptp plugin with host-local IPAM, as a cluster's CNI configures them.
type NetworkSpec struct {
	// Name is the network's name in the configuration list.
	Name string
	// Plugin is "bridge" or "ptp".
	Plugin string
	// Bridge is the bridge plugin's bridge (cni0); unused for ptp.
	Bridge string
	// MTU of the pod link (and the bridge plugin's bridge).
	MTU int
	// Subnets are host-local's ranges, one range set each: two (an IPv4
	// and an IPv6 one) make a dual-stack pod.
	Subnets []string
	// DefaultRoute gives the pod a default route per family through the
	// network's gateway (the bridge plugin's isDefaultGateway; ptp and the
	// IPv6 family through host-local routes). Secondary networks have none.
	DefaultRoute bool
}

// Shapes of the reference plugins, as the CNIs they stand for configure
// them (flannel delegates to the bridge plugin with hairpin mode and the
// bridge as default gateway; kindnet runs ptp).
var (
	// FlannelSpec: bridge plugin, cni0, 10.244.1.0/24, MTU 1450 (VXLAN).
	FlannelSpec = NetworkSpec{Name: "cbr0", Plugin: "bridge", Bridge: "cni0", MTU: 1450, Subnets: []string{"10.244.1.0/24"}, DefaultRoute: true}
	// KindnetSpec: ptp, 10.244.2.0/24, MTU 1500.
	KindnetSpec = NetworkSpec{Name: "kindnet", Plugin: "ptp", MTU: 1500, Subnets: []string{"10.244.2.0/24"}, DefaultRoute: true}
	// DualStackSpec: bridge plugin, 10.244.3.0/24 and fd00:10:244:3::/64.
	DualStackSpec = NetworkSpec{Name: "dualstack", Plugin: "bridge", Bridge: "cni0", MTU: 1450, Subnets: []string{"10.244.3.0/24", "fd00:10:244:3::/64"}, DefaultRoute: true}
	// IPv6Spec: ptp, fd00:10:244:4::/64 only.
	IPv6Spec = NetworkSpec{Name: "ipv6", Plugin: "ptp", MTU: 1500, Subnets: []string{"fd00:10:244:4::/64"}, DefaultRoute: true}
	// SecondarySpec: a Multus secondary network, bridge br-net1,
	// 192.168.100.0/24, no default route.
	SecondarySpec = NetworkSpec{Name: "secondary", Plugin: "bridge", Bridge: "br-net1", MTU: 1500, Subnets: []string{"192.168.100.0/24"}}
)

// CalicoNodeIP is the address the Calico-like node holds (on its uplink), for
// servers the pods reach; CalicoGateway is Calico's fixed on-link gateway.
var (
	CalicoNodeIP  = net.IPv4(10, 10, 0, 1).To4()
	CalicoGateway = net.IPv4(169, 254, 1, 1).To4()
)

// CNINetwork is one CNI network on one node: the node namespace in which
// the plugins run (where the host side of every pod lands), the
// configuration list and libcni's runtime over the built plugins. Pods
// made from one CNINetwork share the node's bridge (bridge plugin) or
// gateway address (ptp) and host-local's address pool.
type CNINetwork struct {
	Spec NetworkSpec
	Node *NS
	// ConfList is the configuration list given to libcni (JSON).
	ConfList []byte
	list     *libcni.NetworkConfigList
	cni      *libcni.CNIConfig
	// calico marks the hand-made Calico-like network (no plugin).
	calico bool
	pods   int
}

// NewCNINetwork prepares a network of spec on node: it builds the plugins
// if needed ([CNIPluginDir]) and writes host-local's and libcni's state
// under tb.TempDir(). No pod exists until [CNINetwork.AddPod].
func NewCNINetwork(tb testing.TB, node *NS, spec NetworkSpec) *CNINetwork {
	tb.Helper()
	dir := CNIPluginDir(tb)
	state := tb.TempDir()
	conf, err := spec.confList(filepath.Join(state, "ipam"))
	require.NoError(tb, err)
	list, err := libcni.NetworkConfFromBytes(conf)
	require.NoError(tb, err, "CNI configuration list %s", conf)
	return &CNINetwork{
		Spec: spec, Node: node, ConfList: conf, list: list,
		cni: libcni.NewCNIConfigWithCacheDir([]string{dir}, filepath.Join(state, "cache"), nil),
	}
}

// confList renders the configuration list of the spec.
func (s NetworkSpec) confList(ipamDir string) ([]byte, error) {
	if s.Plugin != "bridge" && s.Plugin != "ptp" {
		return nil, fmt.Errorf("testutil: NetworkSpec.Plugin %q: want bridge or ptp", s.Plugin)
	}
	if len(s.Subnets) == 0 {
		return nil, fmt.Errorf("testutil: NetworkSpec %q has no Subnets", s.Name)
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, sub := range s.Subnets {
		_, n, err := net.ParseCIDR(sub)
		if err != nil {
			return nil, fmt.Errorf("testutil: NetworkSpec.Subnets %q: %w", sub, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": n.String()}})
		// The bridge plugin adds the default route itself
		// (isDefaultGateway), for each family it has a gateway in.
		if s.DefaultRoute && s.Plugin == "ptp" {
			dst := "0.0.0.0/0"
			if n.IP.To4() == nil {
				dst = "::/0"
			}
			routes = append(routes, map[string]string{"dst": dst})
		}
	}
	ipam := map[string]any{"type": "host-local", "dataDir": ipamDir, "ranges": ranges}
	if routes != nil {
		ipam["routes"] = routes
	}
	plugin := map[string]any{"type": s.Plugin, "mtu": s.MTU, "ipMasq": false, "ipam": ipam}
	if s.Plugin == "bridge" {
		plugin["bridge"] = s.Bridge
		plugin["isGateway"] = true
		plugin["isDefaultGateway"] = s.DefaultRoute
		plugin["hairpinMode"] = true
	}
	return json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": s.Name, "plugins": []any{plugin}})
}

// NewFlannelPod is a pod as flannel leaves it: the bridge plugin's veth in
// cni0 (10.244.1.1/24), eth0 with an address of 10.244.1.0/24, MTU 1450,
// default route via 10.244.1.1.
func NewFlannelPod(tb testing.TB) *Pod { return newShapePod(tb, FlannelSpec) }

// NewJumboFramePod is the flannel-like pod with MTU 9000.
func NewJumboFramePod(tb testing.TB) *Pod {
	s := FlannelSpec
	s.MTU = 9000
	return newShapePod(tb, s)
}

// NewMinimumMTUPod is the flannel-like pod with MTU 1280, IPv6's minimum.
func NewMinimumMTUPod(tb testing.TB) *Pod {
	s := FlannelSpec
	s.MTU = 1280
	return newShapePod(tb, s)
}

// NewKindnetPod is a pod as kindnet leaves it: the ptp plugin's veth,
// eth0 with an address of 10.244.2.0/24, the gateway 10.244.2.1 on the
// host side (as /32), routes via it.
func NewKindnetPod(tb testing.TB) *Pod { return newShapePod(tb, KindnetSpec) }

// NewDualStackPod is a bridge-plugin pod with an IPv4 and an IPv6
// address from host-local's two ranges and a default route per family.
func NewDualStackPod(tb testing.TB) *Pod { return newShapePod(tb, DualStackSpec) }

// NewIPv6Pod is a ptp pod with an IPv6 address only.
func NewIPv6Pod(tb testing.TB) *Pod { return newShapePod(tb, IPv6Spec) }

// NewCalicoPod is a pod as Calico leaves it, made by hand (Calico's plugin
// is not one of the reference plugins): eth0 with a /32 of 10.244.5.0/24,
// 169.254.1.1 on-link and the default route via it; the host side
// cali<id> has no address, answers ARP for everything (proxy_arp, no
// delay) and routes the pod's /32 to it; the node holds [CalicoNodeIP]
// on its uplink. MTU 1440.
func NewCalicoPod(tb testing.TB) *Pod {
	tb.Helper()
	node := NewNS(tb, "vn-node")
	return NewCalicoNetwork(tb, node).AddPod(tb)
}

func newShapePod(tb testing.TB, spec NetworkSpec) *Pod {
	tb.Helper()
	node := NewNS(tb, "vn-node")
	return NewCNINetwork(tb, node, spec).AddPod(tb)
}

// NewCalicoNetwork prepares the hand-made Calico-like network on node
// (see [NewCalicoPod]): forwarding on, and an uplink as a node has one:
// a veth "uplink" holding [CalicoNodeIP]/24 with the default route via
// 10.10.0.254 (its peer, "uplink-peer", stays in the node and holds
// nothing). The default route is what makes proxy ARP answer for
// 169.254.1.1: Linux answers only for addresses it routes out of another
// link.
func NewCalicoNetwork(tb testing.TB, node *NS) *CNINetwork {
	tb.Helper()
	AddVeth(tb, node, "uplink", node, "uplink-peer", 1500)
	up, err := node.Handle.LinkByName("uplink")
	require.NoError(tb, err)
	require.NoError(tb, node.Handle.AddrAdd(up, &netlink.Addr{IPNet: &net.IPNet{IP: CalicoNodeIP, Mask: net.CIDRMask(24, 32)}}))
	require.NoError(tb, node.Handle.RouteAdd(&netlink.Route{LinkIndex: up.Attrs().Index, Gw: net.IPv4(10, 10, 0, 254), Flags: int(netlink.FLAG_ONLINK)}))
	require.NoError(tb, WriteSysctl(node, "net/ipv4/ip_forward", "1"))
	return &CNINetwork{Spec: NetworkSpec{Name: "k8s-pod-network", MTU: 1440, Subnets: []string{"10.244.5.0/24"}, DefaultRoute: true}, Node: node, calico: true}
}

// WriteSysctl writes a /proc/sys value (path relative to /proc/sys)
// inside ns.
func WriteSysctl(ns *NS, path, value string) error {
	return ns.Do(func() error { return os.WriteFile(filepath.Join("/proc/sys", path), []byte(value), 0o644) })
}

// AddPod makes a new pod namespace and runs the network's CNI ADD for its
// eth0 (and the loopback plugin for lo, as a container runtime does), from
// inside the node namespace; DEL runs at cleanup. A second pod of the same
// network shares the node's bridge or ptp gateway: the pod to talk to.
func (n *CNINetwork) AddPod(tb testing.TB) *Pod {
	tb.Helper()
	pod := NewNS(tb, "vn-pod")
	n.pods++
	if n.calico {
		return n.addCalico(tb, pod)
	}
	id := containerID()
	p := &Pod{Pod: pod, Node: n.Node, PodLink: "eth0", Network: n, ContainerID: id}
	n.runLoopback(tb, p)
	res := n.add(tb, p, "eth0")
	p.Result = res
	p.fillFromResult(tb, res, "eth0")
	n.settle(tb)
	return p
}

// Neighbor is a second pod on the same network and node as p (the same
// bridge or ptp host side), for traffic between pods.
func (p *Pod) Neighbor(tb testing.TB) *Pod {
	tb.Helper()
	require.NotNil(tb, p.Network, "Neighbor: pod was not made by a CNINetwork")
	return p.Network.AddPod(tb)
}

// Attachment is a secondary network interface added to a pod the way
// Multus does it.
type Attachment struct {
	Network *CNINetwork
	IfName  string
	IPs     []*net.IPNet
	Gateway net.IP
	MAC     net.HardwareAddr
	MTU     int
	Result  *current.Result
}

// AttachSecondary adds the pod to network n the way Multus does: a second
// CNI ADD on the pod's container ID and namespace with CNI_IFNAME=ifname
// (net1, net2, …), from n's node namespace; DEL runs at cleanup.
func (n *CNINetwork) AttachSecondary(tb testing.TB, p *Pod, ifname string) *Attachment {
	tb.Helper()
	require.False(tb, n.calico, "AttachSecondary: the Calico-like network has no plugin")
	if p.ContainerID == "" {
		p.ContainerID = containerID()
	}
	res := n.add(tb, p, ifname)
	a := &Attachment{Network: n, IfName: ifname, Result: res}
	for _, ipc := range res.IPs {
		ipn := ipc.Address
		a.IPs = append(a.IPs, &ipn)
		if a.Gateway == nil {
			a.Gateway = ipc.Gateway
		}
	}
	l, err := p.Pod.Handle.LinkByName(ifname)
	require.NoError(tb, err, "pod link %s after CNI ADD", ifname)
	a.MAC, a.MTU = l.Attrs().HardwareAddr, l.Attrs().MTU
	return a
}

func containerID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// add runs the CNI ADD of n for p's ifname inside the node namespace.
func (n *CNINetwork) add(tb testing.TB, p *Pod, ifname string) *current.Result {
	tb.Helper()
	rt := &libcni.RuntimeConf{ContainerID: p.ContainerID, NetNS: p.Pod.Path, IfName: ifname}
	var res types.Result
	err := n.Node.Do(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cniTimeout)
		defer cancel()
		var err error
		res, err = n.cni.AddNetworkList(ctx, n.list, rt)
		return err
	})
	require.NoError(tb, err, "CNI ADD %s (%s) for %s %s", n.Spec.Name, n.Spec.Plugin, p.Pod.Name, ifname)
	tb.Cleanup(func() {
		err := n.Node.Do(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), cniTimeout)
			defer cancel()
			return n.cni.DelNetworkList(ctx, n.list, rt)
		})
		if err != nil {
			tb.Errorf("CNI DEL %s for %s %s: %v", n.Spec.Name, p.Pod.Name, ifname, err)
		}
	})
	cur, err := current.NewResultFromResult(res)
	require.NoError(tb, err)
	return cur
}

// loopbackConf is the network a container runtime sets "lo" up with.
const loopbackConf = `{"cniVersion":"1.0.0","name":"cni-loopback","plugins":[{"type":"loopback"}]}`

// runLoopback runs the loopback plugin for p's lo, as containerd and
// CRI-O do before the pod network.
func (n *CNINetwork) runLoopback(tb testing.TB, p *Pod) {
	tb.Helper()
	list, err := libcni.NetworkConfFromBytes([]byte(loopbackConf))
	require.NoError(tb, err)
	rt := &libcni.RuntimeConf{ContainerID: p.ContainerID, NetNS: p.Pod.Path, IfName: "lo"}
	err = n.Node.Do(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cniTimeout)
		defer cancel()
		_, err := n.cni.AddNetworkList(ctx, list, rt)
		return err
	})
	require.NoError(tb, err, "CNI ADD cni-loopback for %s", p.Pod.Name)
}

// fillFromResult sets p's addresses, gateways, MAC, MTU and node link
// from the plugin's result and the pod's kernel state.
func (p *Pod) fillFromResult(tb testing.TB, res *current.Result, ifname string) {
	tb.Helper()
	for _, ipc := range res.IPs {
		ipn := ipc.Address
		if ipn.IP.To4() != nil {
			if p.PodIP == nil {
				p.PodIP, p.PodNet, p.Gateway = ipn.IP.To4(), &ipn, ipc.Gateway.To4()
			}
		} else if p.PodIPv6 == nil {
			p.PodIPv6, p.PodNetV6, p.GatewayV6 = ipn.IP, &ipn, ipc.Gateway
		}
	}
	for _, itf := range res.Interfaces {
		if itf.Sandbox == "" && itf.Name != p.Network.Spec.Bridge {
			p.NodeLink = itf.Name
		}
	}
	l, err := p.Pod.Handle.LinkByName(ifname)
	require.NoError(tb, err, "pod link %s after CNI ADD", ifname)
	p.PodMAC, p.MTU = l.Attrs().HardwareAddr, l.Attrs().MTU
	p.NodeIP, p.NodeIPv6 = p.Gateway, p.GatewayV6
}

// addCalico makes a Calico-like pod by hand: what Calico's plugin leaves.
func (n *CNINetwork) addCalico(tb testing.TB, pod *NS) *Pod {
	tb.Helper()
	ip := net.IPv4(10, 244, 5, byte(10+n.pods)).To4()
	hostLink := "cali" + pod.Name[len(pod.Name)-8:] + "x"
	p := &Pod{Pod: pod, Node: n.Node, PodLink: "eth0", Network: n, NodeLink: hostLink, ContainerID: containerID(),
		PodIP: ip, PodNet: &net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)}, Gateway: CalicoGateway, NodeIP: CalicoNodeIP}
	AddVeth(tb, n.Node, hostLink, pod, "eth0", n.Spec.MTU)
	host, err := n.Node.Handle.LinkByName(hostLink)
	require.NoError(tb, err)
	// Calico gives every host-side veth this MAC; the pod's ARP for
	// 169.254.1.1 is answered by proxy ARP with it.
	calicoMAC := net.HardwareAddr{0xee, 0xee, 0xee, 0xee, 0xee, 0xee}
	require.NoError(tb, n.Node.Handle.LinkSetHardwareAddr(host, calicoMAC))
	require.NoError(tb, WriteSysctl(n.Node, "net/ipv4/conf/"+hostLink+"/proxy_arp", "1"))
	require.NoError(tb, WriteSysctl(n.Node, "net/ipv4/neigh/"+hostLink+"/proxy_delay", "0"))
	require.NoError(tb, n.Node.Handle.RouteAdd(&netlink.Route{LinkIndex: host.Attrs().Index, Dst: p.PodNet, Scope: netlink.SCOPE_LINK}))
	l, err := pod.Handle.LinkByName("eth0")
	require.NoError(tb, err)
	require.NoError(tb, pod.Handle.AddrAdd(l, &netlink.Addr{IPNet: p.PodNet}))
	gw := &net.IPNet{IP: CalicoGateway, Mask: net.CIDRMask(32, 32)}
	require.NoError(tb, pod.Handle.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Dst: gw, Scope: netlink.SCOPE_LINK}))
	require.NoError(tb, pod.Handle.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: CalicoGateway}))
	p.PodMAC, p.MTU = l.Attrs().HardwareAddr, l.Attrs().MTU
	return p
}

// settle waits (bounded) until no IPv6 address of the node is tentative:
// the bridge plugin's gateway on the bridge goes through duplicate address
// detection after ADD returns, and cannot be bound to until then. It
// looks again at each address event of the node (an rtnetlink
// subscription made inside it): the end of DAD is one. Should the
// subscription end (ENOBUFS after a burst, say), it looks every 50 ms.
func (n *CNINetwork) settle(tb testing.TB) {
	tb.Helper()
	updates := make(chan netlink.AddrUpdate, 16)
	done := make(chan struct{})
	err := n.Node.Do(func() error {
		return netlink.AddrSubscribeWithOptions(updates, done, netlink.AddrSubscribeOptions{})
	})
	require.NoError(tb, err, "node %s: address subscription", n.Node.Name)
	defer func() {
		close(done)
		for range updates { // until the subscription's goroutine ends
		}
	}()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	events := (<-chan netlink.AddrUpdate)(updates)
	var poll <-chan time.Time
	for {
		addrs, err := n.Node.Handle.AddrList(nil, netlink.FAMILY_V6)
		if errors.Is(err, netlink.ErrDumpInterrupted) {
			// The address list changed during the dump (DAD ending on
			// another address, say): an event follows, or the deadline.
			addrs = nil
		} else {
			require.NoError(tb, err)
		}
		tentative := ""
		for _, a := range addrs {
			if a.Flags&unix.IFA_F_TENTATIVE != 0 {
				tentative = a.IPNet.String()
			}
		}
		if tentative == "" && err == nil {
			return
		}
		select {
		case _, ok := <-events:
			if !ok {
				events = nil // ended: poll from now on
				poll = time.Tick(50 * time.Millisecond)
			}
		case <-poll:
		case <-deadline.C:
			tb.Fatalf("node %s: IPv6 address %s still tentative after 15 s (last dump: %v)", n.Node.Name, tentative, err)
		}
	}
}
