package e2e

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// cniVMI is the VMI of the CNI-shape guests: one interface of the given
// binding on the pod network (TCP 8080 declared for masquerade), no disks.
func cniVMI(bindingMethod string) string {
	ports := ""
	if bindingMethod == "masquerade" {
		ports = "\n        ports:\n        - {name: http, protocol: TCP, port: 8080}"
	}
	return fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cni-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000000c1
spec:
  domain:
    resources:
      requests:
        memory: 192Mi
    devices:
      interfaces:
      - name: default
        %s: {}%s
  networks:
  - name: default
    pod: {}
`, bindingMethod, ports)
}

// requireDNS checks the DNS part of a lease: the pod's resolv.conf.
func requireDNS(t *testing.T, l map[string]string) {
	t.Helper()
	require.Equal(t, "10.96.0.10", l["dns"])
	require.Equal(t, "default.svc.cluster.local svc.cluster.local cluster.local", l["search"])
}

// TestMasqueradeGuestCNI boots the masquerade guest on pods made by the
// CNI reference plugins (and the hand-made Calico pod): the guest leases
// 10.0.2.2 with the pod's MTU and DNS from our server, pings 10.0.2.1,
// reaches the node with the pod IP as source (masquerade) and the node
// reaches it at the pod IP on the declared port (DNAT).
func TestMasqueradeGuestCNI(t *testing.T) {
	shapes := []struct {
		name string
		pod  func(testing.TB) *testutil.Pod
	}{
		{"flannel", testutil.NewFlannelPod},
		{"kindnet-ptp", testutil.NewKindnetPod},
		{"calico", testutil.NewCalicoPod},
		{"dual-stack", testutil.NewDualStackPod},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			if sh.name != "dual-stack" {
				testutil.SkipCoveredUnderRace(t, "the same hook, DHCP server and router advertisements serve the dual-stack shape's guest under -race; "+
					"what differs between the shapes is the kernel's NAT and routing")
			}
			began := time.Now()
			pod := sh.pod(t)
			g := bootGuest(t, guestCase{vmi: cniVMI("masquerade"), pod: pod, ping: "10.0.2.1", ipv6: pod.PodIPv6 != nil})
			l := g.lease()
			require.Equal(t, "10.0.2.2", l["ip"])
			require.Equal(t, "24", l["mask"])
			require.Equal(t, "10.0.2.1", l["router"])
			require.Equal(t, strconv.Itoa(pod.MTU), l["mtu"], "the pod's MTU")
			requireDNS(t, l)
			require.Contains(t, g.wait("addr"), "10.0.2.2/24 mtu="+strconv.Itoa(pod.MTU))
			require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
			g.requireSource(pod.PodIP)
			if pod.PodIPv6 != nil {
				// Our router advertisements on the dual-stack pod: the
				// guest's kernel takes the default route from them.
				require.Regexp(t, `default via fe80::\S+ dev eth0`, g.wait("routes6"))
			}
			g.wait("listening")
			require.Equal(t, "hello from cni-guest ip=10.0.2.2/24", g.dial(pod.Node, pod.PodIP, 8080))
			g.done()
			t.Logf("masquerade/%s: wall time %s", sh.name, time.Since(began).Round(time.Second))
		})
	}
}

// TestBridgeGuestCNI boots the bridge-binding guest on CNI-made pods.
// The bridge binding needs a dummy link, so on a kernel without one each
// shape runs in a kernel VM of its own with the host's root shared, the
// shapes in parallel, and the guest's QEMU runs on the host, relayed to
// the pod's tap (relayGuest; libvirt opening a bridge binding's tap in
// the pod, nested in the kernel VM, is TestLiveMigrationBridge's and
// TestHotplugGuest's). Per shape: the guest
// gets the pod's own IP by our DHCP with the pod's MTU, DNS and search
// domains (and option 121 on the Calico /32), the node reaches it at the
// pod IP and it reaches the node with the pod IP as source (on the
// kindnet-like ptp shape also a second pod on the node); then phase1
// is run again while the guest runs: no link of the pod flaps or is
// replaced, and the guest still reaches and is reached, and a fresh DHCP
// request gets the same lease.
func TestBridgeGuestCNI(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "kernel VMs with a race-built test binary under TCG; under -race the hook and the DHCP server serve a real guest in TestMasqueradeGuestCNI, "+
		"phase1's bridge binding with its dummy and the hook's live update in the kernel VM in TestLivePlugDHCP, phase1 re-run in reliability")
	t.Parallel()
	// One kernel VM per shape, two at a time (go test's -parallel is the
	// number of CPUs): a VM runs on one host core (its TCG thread), so a
	// two-core machine runs two shapes side by side instead of five in a
	// row in one VM. The plugins and the guest tool are built here, where
	// the go command is; the VMs find them through the host root share.
	vm := kernelvm.Options{
		Needs:     []string{"dummy", "bridge", "veth", "tun"},
		HostRoot:  true,
		MemoryMiB: 2048,
		Timeout:   10 * time.Minute,
		CacheDir:  kernelVMCapsCacheDir(),
		Env:       []string{"VIRTNET_KERNELVM_DIR"},
	}
	if os.Getenv(kernelvm.EnvInVM) != "1" {
		vm.SetEnv = map[string]string{
			testutil.CNIPluginDirEnv: testutil.CNIPluginDir(t),
			guestToolEnv:             guestTool(t),
		}
	}
	shape := func(name string, f func(t *testing.T)) {
		if raceDetector && name != "flannel" {
			// CI runs the suite twice, the second time under -race
			// (where test.sh skips the whole test). A kernel VM runs a
			// race-built test binary 3-9 times slower under TCG; one
			// shape (the DHCP server, the hook and phase1's re-run
			// watched by the race detector) is enough: the other
			// shapes' checks do not change with -race and run in the
			// build without it.
			t.Logf("race build: %s runs in the build without -race", name)
			return
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := vm
			if os.Getenv(kernelvm.EnvInVM) != "1" && os.Geteuid() == 0 && !testing.Short() && kernelvm.Supported(vm.Needs...) != nil {
				// The guest's QEMU on the host, relayed to the pod's tap
				// in the kernel VM (relayGuest): 20 s a shape where a
				// guest nested under TCG took 100-220 s.
				opts = newHostRelay(t, vm)
			}
			if kernelvm.DelegateWith(t, opts) {
				return
			}
			f(t)
		})
	}
	shape("flannel", func(t *testing.T) {
		began := time.Now()
		pod := testutil.NewFlannelPod(t)
		g := bootGuest(t, guestCase{vmi: cniVMI("bridge"), pod: pod, ping: pod.NodeIP.String()})
		l := g.lease()
		require.Equal(t, pod.PodIP.String(), l["ip"], "the pod's own IP")
		require.Equal(t, "24", l["mask"])
		require.Equal(t, "10.244.1.1", l["router"])
		require.Equal(t, "1450", l["mtu"])
		requireDNS(t, l)
		require.Contains(t, g.wait("addr"), pod.PodIP.String()+"/24 mtu=1450")
		g.checkBridgeTraffic(pod, 24)
		g.rerunPhase1(pod, 24)
		g.done()
		t.Logf("bridge/flannel: wall time %s", time.Since(began).Round(time.Second))
	})
	shape("dual-stack", func(t *testing.T) {
		// The bridge plugin's dual-stack pod: IPv4 as on flannel, and
		// the pod's IPv6 by DHCPv6 with its /64 on-link and the
		// default route via cni0's link-local address.
		began := time.Now()
		pod := testutil.NewDualStackPod(t)
		peer := pod.Neighbor(t)
		g := bootGuest(t, guestCase{vmi: cniVMI("bridge"), pod: pod, ping: pod.NodeIP.String(), peer: peer, dhcp6: true})
		l := g.lease()
		require.Equal(t, pod.PodIP.String(), l["ip"], "the pod's own IP")
		require.Equal(t, "24", l["mask"])
		require.Equal(t, pod.Gateway.String(), l["router"])
		require.Equal(t, "1450", l["mtu"])
		requireDNS(t, l)
		require.Contains(t, g.wait("addr"), pod.PodIP.String()+"/24 mtu=1450")
		g.checkBridgeTraffic(pod, 24)
		g.requirePeer(pod.PodIP)
		g.checkBridgeIPv6(pod, peer, true)
		g.done()
		t.Logf("bridge/dual-stack: wall time %s", time.Since(began).Round(time.Second))
	})
	shape("ipv6-only-ptp", func(t *testing.T) {
		// The ptp plugin's IPv6-only pod: no DHCPv4, the pod's IPv6
		// by DHCPv6, nothing on-link (ptp routes its subnet through
		// the gateway), the default route via the host veth's
		// link-local address.
		began := time.Now()
		pod := testutil.NewIPv6Pod(t)
		peer := pod.Neighbor(t)
		g := bootGuest(t, guestCase{vmi: cniVMI("bridge"), pod: pod, peer: peer, dhcp6: true, v6only: true})
		g.checkBridgeIPv6(pod, peer, false)
		g.done()
		t.Logf("bridge/ipv6-only-ptp: wall time %s", time.Since(began).Round(time.Second))
	})
	shape("calico", func(t *testing.T) {
		began := time.Now()
		pod := testutil.NewCalicoPod(t)
		g := bootGuest(t, guestCase{vmi: cniVMI("bridge"), pod: pod, ping: pod.NodeIP.String()})
		l := g.lease()
		require.Equal(t, pod.PodIP.String(), l["ip"], "the pod's own IP")
		require.Equal(t, "32", l["mask"])
		// Option 121: the gateway on-link, the default route via it.
		routes := strings.Fields(l["staticroutes"])
		require.Contains(t, pairs(routes), "169.254.1.1/32 0.0.0.0")
		require.Contains(t, pairs(routes), "0.0.0.0/0 169.254.1.1")
		require.Equal(t, "1440", l["mtu"])
		requireDNS(t, l)
		require.Contains(t, g.wait("addr"), pod.PodIP.String()+"/32 mtu=1440")
		require.Contains(t, g.wait("routes"), "default via 169.254.1.1 dev eth0")
		g.checkBridgeTraffic(pod, 32)
		g.rerunPhase1(pod, 32)
		g.done()
		t.Logf("bridge/calico: wall time %s", time.Since(began).Round(time.Second))
	})
	shape("kindnet-ptp", func(t *testing.T) {
		began := time.Now()
		pod := testutil.NewKindnetPod(t)
		peer := pod.Neighbor(t)
		g := bootGuest(t, guestCase{vmi: cniVMI("bridge"), pod: pod, ping: pod.NodeIP.String(), peer: peer})
		l := g.lease()
		require.Equal(t, pod.PodIP.String(), l["ip"], "the pod's own IP")
		// The ptp plugin leaves a /32 on eth0 with its host side's
		// address on-link and the pod subnet and default via it: the
		// lease says so in option 121, as on Calico.
		require.Equal(t, "32", l["mask"])
		gw := pod.Gateway.String()
		routes := pairs(strings.Fields(l["staticroutes"]))
		require.Contains(t, routes, gw+"/32 0.0.0.0")
		subnet := &net.IPNet{IP: pod.PodIP.Mask(pod.PodNet.Mask), Mask: pod.PodNet.Mask}
		require.Contains(t, routes, subnet.String()+" "+gw)
		require.Contains(t, routes, "0.0.0.0/0 "+gw)
		require.Equal(t, gw, l["router"])
		require.Equal(t, "1500", l["mtu"])
		requireDNS(t, l)
		require.Contains(t, g.wait("addr"), pod.PodIP.String()+"/32 mtu=1500")
		g.checkBridgeTraffic(pod, 32)
		// The second pod on the same ptp node, with the pod IP as source.
		g.requirePeer(pod.PodIP)
		g.rerunPhase1(pod, 32)
		g.done()
		t.Logf("bridge/kindnet-ptp: wall time %s", time.Since(began).Round(time.Second))
	})
}

// checkBridgeIPv6 checks the bridge binding's IPv6 in a dhcp6 guest: the
// DHCPv6 lease is the pod's IPv6 with the pod's search list, the guest
// holds it as a /128 with the pod's MTU, its default route goes via the
// router's link-local address phase1 recorded (the CNI gateway's) and
// the pod's subnet is on-link only when onLink; it pings the node's IPv6
// address and reaches the node's and the peer's servers with the pod's
// IPv6 as source; the node and the peer reach it at the pod's IPv6.
func (g *guest) checkBridgeIPv6(pod, peer *testutil.Pod, onLink bool) {
	t := g.t
	t.Helper()
	rec, err := g.store.ReadInterface(g.vmi.Metadata.UID, g.vmi.Spec.Domain.Devices.Interfaces[0].Name)
	require.NoError(t, err)
	require.NotEmpty(t, rec.RouterIPv6, "phase1 found the gateway's link-local address")
	line := g.wait("lease6", "lease6-failed")
	require.True(t, strings.HasPrefix(line, "lease6 "), "guest: %s", line)
	l6 := parseKV(strings.TrimPrefix(line, "lease6 "))
	require.Equal(t, pod.PodIPv6.String(), l6["address"], "the pod's own IPv6 (IA_NA)")
	require.Equal(t, "default.svc.cluster.local svc.cluster.local cluster.local", l6["search"])
	mtu := strconv.Itoa(pod.MTU)
	require.Contains(t, g.wait("addr6"), pod.PodIPv6.String()+"/128 mtu="+mtu)
	routes6 := g.wait("routes6")
	require.Regexp(t, `default via `+regexp.QuoteMeta(rec.RouterIPv6.String())+` dev eth0`, routes6, "the default route via the CNI gateway's link-local address")
	subnet := (&net.IPNet{IP: pod.PodIPv6.Mask(pod.PodNetV6.Mask), Mask: pod.PodNetV6.Mask}).String()
	if onLink {
		require.Contains(t, routes6, subnet+" dev eth0", "the pod's on-link prefix")
	} else {
		require.NotContains(t, routes6, subnet, "nothing on-link: the pod had its subnet through the gateway")
	}
	require.Regexp(t, `^ping6-ok 3 packets transmitted, 3 packets received`, g.wait("ping6-ok", "ping6-failed"))
	for _, c := range []struct {
		what string
		seen <-chan string
	}{{"source6", g.node6Seen}, {"peer6", g.peer6Seen}} {
		line := g.wait(c.what)
		require.Equal(t, c.what+" "+pod.PodIPv6.String(), strings.Join(strings.Fields(line)[:2], " "))
		select {
		case host := <-c.seen:
			require.Equal(t, pod.PodIPv6.String(), host, "%s: the server must see the pod's IPv6 as the guest's source", c.what)
		case <-g.ctx.Done():
			t.Fatalf("%s: the server saw no connection", c.what)
		}
	}
	g.wait("listening")
	for _, from := range []*testutil.NS{pod.Node, peer.Pod} {
		// "hello from <hostname>": the IPv6-only guest has no DHCPv4
		// lease, which is what names it.
		require.True(t, strings.HasPrefix(g.dial(from, pod.PodIPv6, 8080), "hello from "), "%s reaches the guest at the pod's IPv6", from.Name)
	}
}

// pairs joins a classless-routes list "dst gw dst gw …" into "dst gw"
// items.
func pairs(f []string) []string {
	var out []string
	for i := 0; i+1 < len(f); i += 2 {
		out = append(out, f[i]+" "+f[i+1])
	}
	return out
}

// checkBridgeTraffic: ping the node, the node's server sees the pod IP,
// and the node reaches the guest at the pod IP, which holds the prefix
// length ones.
func (g *guest) checkBridgeTraffic(pod *testutil.Pod, ones int) {
	g.t.Helper()
	require.Regexp(g.t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
	g.requireSource(pod.PodIP)
	g.wait("listening")
	require.Equal(g.t, fmt.Sprintf("hello from cni-guest ip=%s/%d", pod.PodIP, ones), g.dial(pod.Node, pod.PodIP, 8080))
}

// rerunPhase1 runs phase1 again while the guest runs, watching the pod's
// links: none may go down, lose its carrier or be deleted, and each keeps
// its ifindex; afterwards the node still reaches the guest and a fresh
// DHCP request from the guest gets the same address and prefix length
// (ones).
func (g *guest) rerunPhase1(pod *testutil.Pod, ones int) {
	t := g.t
	t.Helper()
	watched := []string{"eth0-nic", "k6t-eth0", "tap0", "eth0"}
	before := map[string]int{}
	for _, name := range watched {
		l, err := pod.Pod.Handle.LinkByName(name)
		require.NoError(t, err, "pod link %s", name)
		before[name] = l.Attrs().Index
	}
	h, err := netns.GetFromPath(pod.Pod.Path)
	require.NoError(t, err)
	defer h.Close()
	updates := make(chan netlink.LinkUpdate, 256)
	stop := make(chan struct{})
	require.NoError(t, netlink.LinkSubscribeWithOptions(updates, stop, netlink.LinkSubscribeOptions{Namespace: &h}))
	t0 := time.Now()
	require.NoError(t, phase1.Run(g.ctx, g.vmi, pod.Pod.Path, g.store, phase1.Options{Logger: g.log}))
	t.Logf("phase1 re-run while the guest runs: %s", time.Since(t0).Round(time.Millisecond))
	// A sentinel instead of a pause for late notifications: the kernel
	// sends a socket's link notifications in order, so once the change
	// made now to the pod's lo (no watched link) arrives, every one that
	// phase1's re-run caused has arrived before it.
	sentinel := "vn-sentinel-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	lo, err := pod.Pod.Handle.LinkByName("lo")
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.LinkSetAlias(lo, sentinel))
	var flaps []string
	for done := false; !done; {
		select {
		case <-g.ctx.Done():
			t.Fatalf("the sentinel link notification did not come: %v", g.ctx.Err())
		case u, ok := <-updates:
			if !ok {
				t.Fatal("the link notifications ended before the sentinel came")
			}
			a := u.Attrs()
			if a.Name == "lo" && a.Alias == sentinel {
				done = true
				break
			}
			if _, ok := before[a.Name]; !ok {
				continue
			}
			switch {
			case u.Header.Type == unix.RTM_DELLINK:
				flaps = append(flaps, a.Name+" deleted")
			case a.Flags&net.FlagUp == 0:
				flaps = append(flaps, a.Name+" down")
			case a.Name != "eth0" && a.OperState != netlink.OperUp && a.OperState != netlink.OperUnknown:
				flaps = append(flaps, fmt.Sprintf("%s operstate %s", a.Name, a.OperState))
			}
		}
	}
	close(stop)
	require.Empty(t, flaps, "phase1's re-run must not flap the pod's links")
	for _, name := range watched {
		l, err := pod.Pod.Handle.LinkByName(name)
		require.NoError(t, err, "pod link %s after the re-run", name)
		require.Equal(t, before[name], l.Attrs().Index, "%s replaced by the re-run", name)
	}
	require.Equal(t, fmt.Sprintf("hello from cni-guest ip=%s/%d", pod.PodIP, ones), g.dial(pod.Node, pod.PodIP, 8080))
	renew := g.dial(pod.Node, pod.PodIP, 8081)
	require.True(t, strings.HasPrefix(renew, "renew "), "fresh DHCP request after the re-run: %q", renew)
	kv := parseKV(strings.TrimPrefix(renew, "renew "))
	require.Equal(t, pod.PodIP.String(), kv["ip"], "the same lease after the re-run")
	require.Equal(t, strconv.Itoa(ones), kv["mask"])
}
