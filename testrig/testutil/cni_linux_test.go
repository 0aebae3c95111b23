package testutil

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
)

// TestCNIShapes makes each pod shape with the reference plugins (or by
// hand, Calico) and checks the kernel state the plugin left against what
// that CNI leaves in a cluster, then traffic: pod → node server (the node
// sees the pod IP) and pod → second pod on the same node.
func TestCNIShapes(t *testing.T) {
	SkipCoveredUnderRace(t, "the rig makes these pods, through the same code, for every kernel test the race pass keeps; its own checks read netlink sequentially")
	tests := []struct {
		name     string
		make     func(testing.TB) *Pod
		mtu      int
		prefix   int    // IPv4 prefix length on eth0, 0 without IPv4
		prefix6  int    // IPv6 prefix length on eth0, 0 without IPv6
		gw       string // IPv4 default route's gateway
		bridge   string // the host side's master in the node, "" for none
		onlink   bool   // the IPv4 gateway has an on-link /32 route
		nodeAddr string // the address the node holds for the pod ("" for Gateway)
	}{
		{name: "flannel", make: NewFlannelPod, mtu: 1450, prefix: 24, gw: "10.244.1.1", bridge: "cni0"},
		{name: "jumbo", make: NewJumboFramePod, mtu: 9000, prefix: 24, gw: "10.244.1.1", bridge: "cni0"},
		{name: "minimum-mtu", make: NewMinimumMTUPod, mtu: 1280, prefix: 24, gw: "10.244.1.1", bridge: "cni0"},
		{name: "kindnet", make: NewKindnetPod, mtu: 1500, prefix: 24, gw: "10.244.2.1", onlink: true},
		{name: "calico", make: NewCalicoPod, mtu: 1440, prefix: 32, gw: "169.254.1.1", onlink: true, nodeAddr: "10.10.0.1"},
		{name: "dual-stack", make: NewDualStackPod, mtu: 1450, prefix: 24, prefix6: 64, gw: "10.244.3.1", bridge: "cni0"},
		{name: "ipv6", make: NewIPv6Pod, mtu: 1500, prefix6: 64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.make(t)
			l, err := p.Pod.Handle.LinkByName("eth0")
			require.NoError(t, err)
			require.Equal(t, tc.mtu, l.Attrs().MTU, "pod MTU")
			require.Equal(t, tc.mtu, p.MTU)
			require.Equal(t, l.Attrs().HardwareAddr, p.PodMAC)

			addrs4, err := p.Pod.Handle.AddrList(l, netlink.FAMILY_V4)
			require.NoError(t, err)
			if tc.prefix == 0 {
				require.Empty(t, addrs4)
				require.Nil(t, p.PodIP)
			} else {
				require.Len(t, addrs4, 1)
				ones, _ := addrs4[0].Mask.Size()
				require.Equal(t, tc.prefix, ones)
				require.True(t, addrs4[0].IP.Equal(p.PodIP))
				def := defaultRoute(t, p.Pod, netlink.FAMILY_V4)
				require.Equal(t, tc.gw, def.Gw.String())
				require.True(t, p.Gateway.Equal(def.Gw))
				if tc.onlink {
					requireOnLink(t, p.Pod, l.Attrs().Index, def.Gw)
				}
			}
			if tc.prefix6 == 0 {
				require.Nil(t, p.PodIPv6)
			} else {
				addrs6, err := p.Pod.Handle.AddrList(l, netlink.FAMILY_V6)
				require.NoError(t, err)
				var global []netlink.Addr
				for _, a := range addrs6 {
					if a.IP.IsGlobalUnicast() {
						global = append(global, a)
					}
				}
				require.Len(t, global, 1)
				ones, _ := global[0].Mask.Size()
				require.Equal(t, tc.prefix6, ones)
				require.True(t, global[0].IP.Equal(p.PodIPv6))
				require.NotNil(t, defaultRoute(t, p.Pod, netlink.FAMILY_V6).Gw)
			}

			host, err := p.Node.Handle.LinkByName(p.NodeLink)
			require.NoError(t, err, "host side %q in the node", p.NodeLink)
			if tc.bridge != "" {
				br, err := p.Node.Handle.LinkByName(tc.bridge)
				require.NoError(t, err)
				require.Equal(t, br.Attrs().Index, host.Attrs().MasterIndex, "host side enslaved to %s", tc.bridge)
			} else {
				require.Zero(t, host.Attrs().MasterIndex)
			}
			if tc.nodeAddr != "" {
				require.Equal(t, tc.nodeAddr, p.NodeIP.String())
			}

			// pod → node, and pod → second pod on the same node.
			other := p.Neighbor(t)
			require.Equal(t, p.Node, other.Node)
			if p.PodIP != nil {
				require.False(t, p.PodIP.Equal(other.PodIP), "two pods, one address")
				require.Equal(t, p.PodIP.String(), roundTrip(t, p.Node, p.NodeIP, p.Pod))
				require.Equal(t, p.PodIP.String(), roundTrip(t, other.Pod, other.PodIP, p.Pod))
			}
			if p.PodIPv6 != nil {
				require.Equal(t, p.PodIPv6.String(), roundTrip(t, other.Pod, other.PodIPv6, p.Pod))
				if p.NodeIPv6 != nil && !p.NodeIPv6.IsLinkLocalUnicast() {
					require.Equal(t, p.PodIPv6.String(), roundTrip(t, p.Node, p.NodeIPv6, p.Pod))
				}
			}
		})
	}
}

// TestCNISecondaryNetwork adds net1 the way Multus does (a second ADD on
// the same container with CNI_IFNAME=net1) and checks it beside eth0.
func TestCNISecondaryNetwork(t *testing.T) {
	p := NewFlannelPod(t)
	sec := NewCNINetwork(t, p.Node, SecondarySpec)
	a := sec.AttachSecondary(t, p, "net1")
	require.Equal(t, "net1", a.IfName)
	require.Len(t, a.IPs, 1)
	require.True(t, a.IPs[0].IP.Equal(net.IPv4(192, 168, 100, 2)), "first address of host-local's range: %s", a.IPs[0])
	require.Equal(t, 1500, a.MTU)
	l, err := p.Pod.Handle.LinkByName("net1")
	require.NoError(t, err)
	require.Equal(t, a.MAC, l.Attrs().HardwareAddr)
	// eth0 keeps the only default route.
	def := defaultRoute(t, p.Pod, netlink.FAMILY_V4)
	eth0, err := p.Pod.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.Equal(t, eth0.Attrs().Index, def.LinkIndex)
	// The secondary bridge is its own: br-net1, beside cni0.
	_, err = p.Node.Handle.LinkByName("br-net1")
	require.NoError(t, err)
	require.Equal(t, "192.168.100.2", roundTrip(t, p.Node, net.IPv4(192, 168, 100, 1), p.Pod))
	// A neighbor on net1 reaches this pod over it.
	other := p.Neighbor(t)
	a2 := sec.AttachSecondary(t, other, "net1")
	require.Equal(t, a2.IPs[0].IP.String(), roundTrip(t, p.Pod, a.IPs[0].IP, other.Pod))
}

func defaultRoute(t *testing.T, ns *NS, family int) netlink.Route {
	t.Helper()
	routes, err := ns.Handle.RouteList(nil, family)
	require.NoError(t, err)
	for _, r := range routes {
		if r.Dst == nil || r.Dst.IP.IsUnspecified() {
			return r
		}
	}
	t.Fatalf("no default route (family %d) in %s: %v", family, ns.Name, routes)
	return netlink.Route{}
}

func requireOnLink(t *testing.T, ns *NS, link int, gw net.IP) {
	t.Helper()
	routes, err := ns.Handle.RouteList(nil, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, r := range routes {
		if r.LinkIndex == link && r.Dst != nil && r.Dst.IP.Equal(gw) && r.Scope == netlink.SCOPE_LINK {
			if ones, _ := r.Dst.Mask.Size(); ones == 32 {
				return
			}
		}
	}
	t.Fatalf("no on-link /32 route to %s in %s: %v", gw, ns.Name, routes)
}

// roundTrip listens on addr:0 in srv, connects from cli, and returns the
// source address the server saw.
func roundTrip(t *testing.T, srv *NS, addr net.IP, cli *NS) string {
	t.Helper()
	var ln net.Listener
	require.NoError(t, srv.Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
		return err
	}))
	defer ln.Close()
	seen := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			seen <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		_, _ = io.WriteString(c, host+"\n")
		seen <- host
	}()
	var got []byte
	require.NoError(t, cli.Do(func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		got, err = io.ReadAll(c)
		return err
	}), "connect from %s to %s", cli.Name, ln.Addr())
	host := <-seen
	require.Equal(t, host, strings.TrimSpace(string(got)))
	return host
}
