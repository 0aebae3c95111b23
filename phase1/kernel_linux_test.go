package phase1_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// vmNS emulates the VM: a veth with one end enslaved to the pod's bridge
// and the other, named eth0, in a new namespace with the VM's MAC and
// address and a default route via gw.
func vmNS(t *testing.T, pod *testutil.NS, bridge string, mac cache.MAC, cidr netip.Prefix, gw netip.Addr) *testutil.NS {
	t.Helper()
	vm := testutil.NewNS(t, "vn-vm")
	testutil.AddVeth(t, pod, "vmport", vm, "eth0", 1440)
	port, err := pod.Handle.LinkByName("vmport")
	require.NoError(t, err)
	br, err := pod.Handle.LinkByName(bridge)
	require.NoError(t, err)
	require.NoError(t, pod.Handle.LinkSetMaster(port, br))
	l, err := vm.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.NoError(t, vm.Handle.LinkSetDown(l))
	require.NoError(t, vm.Handle.LinkSetHardwareAddr(l, mac.HardwareAddr()))
	require.NoError(t, vm.Handle.LinkSetUp(l))
	addr, err := netlink.ParseAddr(cidr.String())
	require.NoError(t, err)
	require.NoError(t, vm.Handle.AddrAdd(l, addr))
	require.NoError(t, vm.Handle.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(gw.AsSlice())}))
	return vm
}

func realRun(t *testing.T, vmi *api.VMI, pod *testutil.Pod) *cache.Store {
	t.Helper()
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	return s
}

// TestMasqueradeTraffic runs masquerade phase1 on this kernel and sends
// real traffic: inbound to a declared port reaches the VM, to another
// port does not, and the VM reaches an outside server with the pod IP as
// its source.
func TestMasqueradeTraffic(t *testing.T) {
	pod := testutil.NewPod(t)
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	s := realRun(t, vmi, pod)
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	vm := vmNS(t, pod.Pod, rec.Bridge, rec.MAC, rec.IPv4, rec.Gateway)

	testutil.ServeSource(t, vm, "tcp4", "0.0.0.0:80")
	testutil.ServeSource(t, vm, "tcp4", "0.0.0.0:9090")
	testutil.ServeSource(t, pod.Node, "tcp4", "10.244.1.1:8000")

	seen, err := testutil.DialSource(pod.Node, "tcp4", "10.244.1.7:80", 1)
	require.NoError(t, err, "declared port 80 must reach the VM")
	require.Equal(t, "10.244.1.1", seen)
	_, err = testutil.DialSource(pod.Node, "tcp4", "10.244.1.7:9090", 1)
	require.Error(t, err, "undeclared port 9090 must not reach the VM")
	seen, err = testutil.DialSource(vm, "tcp4", "10.244.1.1:8000", 1)
	require.NoError(t, err, "the VM must reach the outside")
	require.Equal(t, "10.244.1.7", seen, "the outside sees the pod IP")
	seen, err = testutil.DialSource(pod.Pod, "tcp4", "127.0.0.1:80", 1)
	require.NoError(t, err, "the pod's loopback reaches the VM on a declared port")
	require.Equal(t, rec.Gateway.String(), seen)

	// A re-run changes nothing and keeps the traffic flowing.
	before := testutil.CacheFiles(t, s)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	require.Equal(t, before, testutil.CacheFiles(t, s))
	_, err = testutil.DialSource(pod.Node, "tcp4", "10.244.1.7:80", 1)
	require.NoError(t, err)
}

// portRangesVMI is KubeVirt 1.x's masquerade with portRanges (issue 22).
const portRangesVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-ranges, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces:
      - name: default
        masquerade: {}
        portRanges: [{protocol: TCP, start: 8000, end: 8010}, {protocol: TCP, start: 9000, end: 9000}]
  networks: [{name: default, pod: {}}]
`

// TestMasqueradePortRangesTraffic runs masquerade phase1 with KubeVirt
// 1.x's portRanges on this kernel: the first and last port of a range
// reach the VM stand-in from the node and from the pod's loopback, the
// ports just outside it do not (a portRanges VMI must not be opened
// wide, as it was when portRanges was dropped).
func TestMasqueradePortRangesTraffic(t *testing.T) {
	pod := testutil.NewPod(t)
	vmi := testutil.LoadVMI(t, portRangesVMI)
	s := realRun(t, vmi, pod)
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	vm := vmNS(t, pod.Pod, rec.Bridge, rec.MAC, rec.IPv4, rec.Gateway)
	for _, port := range []string{"7999", "8000", "8010", "8011", "9000", "9001"} {
		testutil.ServeSource(t, vm, "tcp4", "0.0.0.0:"+port)
	}
	for _, tc := range []struct {
		port  string
		reach bool
	}{{"8000", true}, {"8010", true}, {"9000", true}, {"7999", false}, {"8011", false}, {"9001", false}} {
		seen, err := testutil.DialSource(pod.Node, "tcp4", "10.244.1.7:"+tc.port, 1)
		if !tc.reach {
			require.Error(t, err, "port %s is outside the ranges: it must not reach the VM", tc.port)
			continue
		}
		require.NoError(t, err, "port %s is in a range: it must reach the VM", tc.port)
		require.Equal(t, "10.244.1.1", seen)
		seen, err = testutil.DialSource(pod.Pod, "tcp4", "127.0.0.1:"+tc.port, 1)
		require.NoError(t, err, "the pod's loopback reaches the VM on port %s", tc.port)
		require.Equal(t, rec.Gateway.String(), seen)
	}
}

// TestBridgeNoIPAMKernel runs the IPAM-less bridge binding (no dummy
// needed) on this kernel and cleans it up again.
func TestBridgeNoIPAMKernel(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true, MTU: 1400})
	vmi := testutil.LoadVMI(t, bridgeVMI)
	s := realRun(t, vmi, pod)
	h := pod.Pod.Handle
	eth0, err := h.LinkByName("eth0")
	require.NoError(t, err)
	br, err := h.LinkByName("k6t-eth0")
	require.NoError(t, err)
	require.Equal(t, br.Attrs().Index, eth0.Attrs().MasterIndex)
	require.Equal(t, br.Attrs().HardwareAddr.String(), eth0.Attrs().HardwareAddr.String())
	require.Equal(t, 1400, br.Attrs().MTU)
	tap, err := h.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, "tuntap", tap.Type())
	require.Equal(t, br.Attrs().Index, tap.Attrs().MasterIndex)
	require.Equal(t, uint32(0), tap.(*netlink.Tuntap).Owner, "a root VMI's tap is root's (v0.53)")
	require.Equal(t, 1400, tap.Attrs().MTU)
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	require.True(t, rec.IPAMDisabled)
	require.Equal(t, pod.PodMAC.String(), recText(rec.MAC), "the VM keeps the pod's MAC")

	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	eth0, err = h.LinkByName("eth0")
	require.NoError(t, err)
	require.Zero(t, eth0.Attrs().MasterIndex)
	require.Equal(t, pod.PodMAC.String(), eth0.Attrs().HardwareAddr.String())
	_, err = h.LinkByName("k6t-eth0")
	require.Error(t, err)
	_, err = h.LinkByName("tap0")
	require.Error(t, err)
}

// TestLongNameKernel: with KubeVirt 1.x's hashed pod interface names
// (14 bytes), the bridge and NIC take KubeVirt v1.9.0's names (the hash
// without "pod": k6t-16477688c0e, 16477688c0e-nic); a pod prepared under
// an earlier release's bridge name is resumed and cleaned up under it.
func TestLongNameKernel(t *testing.T) {
	podIface := api.HashedPodInterface("blue")
	pod := testutil.NewPodWith(t, testutil.PodConfig{Link: podIface, NoIPAM: true})
	vmi := testutil.LoadVMI(t, `
metadata:
  name: long
  namespace: default
  uid: `+uid+`
  annotations: {virtnet.io/pod-interface-names: hashed}
spec:
  domain: {devices: {interfaces: [{name: blue, bridge: {}}]}}
  networks: [{name: blue, multus: {networkName: blue-net}}]
`)
	s := realRun(t, vmi, pod)
	rec, err := s.ReadInterface(uid, "blue")
	require.NoError(t, err)
	require.Equal(t, podIface, rec.PodInterface)
	require.Equal(t, "k6t-16477688c0e", rec.Bridge)
	require.Equal(t, "tap16477688c0e", rec.Tap)
	br := mustNL(t, pod.Pod, rec.Bridge)
	require.Equal(t, br.Attrs().Index, mustNL(t, pod.Pod, podIface).Attrs().MasterIndex)
	require.Equal(t, br.Attrs().Index, mustNL(t, pod.Pod, rec.Tap).Attrs().MasterIndex)

	// #22.4, upgrades: a pod an earlier release prepared has its bridge
	// under virtnet's (before v0.1.0) short form (k6t-58d19be530f) and says so in
	// its record. A re-run resumes under that name (no second bridge) and
	// Cleanup removes it and frees the pod link.
	const old = "k6t-58d19be530f"
	h := pod.Pod.Handle
	require.NoError(t, h.LinkSetDown(br))
	require.NoError(t, h.LinkSetName(br, old))
	require.NoError(t, h.LinkSetUp(br))
	rec.Bridge = old
	testutil.WriteRecord(t, s, uid, rec)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	_, err = h.LinkByName("k6t-16477688c0e")
	require.Error(t, err, "no bridge under the new name")
	br = mustNL(t, pod.Pod, old)
	require.Equal(t, br.Attrs().Index, mustNL(t, pod.Pod, podIface).Attrs().MasterIndex)
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	_, err = h.LinkByName(old)
	require.Error(t, err, "the old bridge is gone")
	_, err = h.LinkByName(rec.Tap)
	require.Error(t, err, "the tap is gone")
	require.Zero(t, mustNL(t, pod.Pod, podIface).Attrs().MasterIndex, "the pod link is free")
}

func mustNL(t *testing.T, ns *testutil.NS, name string) netlink.Link {
	t.Helper()
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	return l
}

// TestBridgeIPAMKernel runs the bridge binding with IPAM for real; the
// dummy it needs makes it run inside the kernel VM on this machine. The
// namespace must show the state of the source document, and an emulated
// VM holding the pod IP and MAC reaches the pod's peer across eth0-nic.
func TestBridgeIPAMKernel(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test of sequential netlink calls; phase1 runs under -race on this kernel in TestBridgeNoIPAMKernel and the masquerade tests")
	if kernelvm.Delegate(t, "dummy", "bridge", "veth", "tun") {
		return
	}
	pod := testutil.NewPod(t)
	vmi := testutil.LoadVMI(t, bridgeVMI)
	s := realRun(t, vmi, pod)
	h := pod.Pod.Handle

	br := mustNL(t, pod.Pod, "k6t-eth0")
	nic := mustNL(t, pod.Pod, "eth0-nic")
	require.Equal(t, "veth", nic.Type())
	require.Equal(t, br.Attrs().Index, nic.Attrs().MasterIndex, "eth0-nic master k6t-eth0")
	require.NotZero(t, nic.Attrs().Flags&net.FlagUp)
	dummy := mustNL(t, pod.Pod, "eth0")
	require.Equal(t, "dummy", dummy.Type())
	require.Zero(t, dummy.Attrs().Flags&net.FlagUp, "dummy eth0 stays DOWN")
	require.NotZero(t, dummy.Attrs().RawFlags&0x80, "dummy eth0 is NOARP")
	addrs, err := h.AddrList(dummy, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, "10.244.1.7/24", addrs[0].IPNet.String())
	addrs, err = h.AddrList(br, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, "169.254.75.10/32", addrs[0].IPNet.String())
	tap := mustNL(t, pod.Pod, "tap0")
	require.Equal(t, br.Attrs().Index, tap.Attrs().MasterIndex, "tap0 master k6t-eth0")

	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	require.Equal(t, pod.PodMAC.String(), recText(rec.MAC))
	vm := vmNS(t, pod.Pod, "k6t-eth0", rec.MAC, rec.IPv4, rec.Gateway)
	testutil.ServeSource(t, pod.Node, "tcp4", "10.244.1.1:8000")
	seen, err := testutil.DialSource(vm, "tcp4", "10.244.1.1:8000", 1)
	require.NoError(t, err, "the emulated VM reaches the pod's peer across eth0-nic")
	require.Equal(t, "10.244.1.7", seen)

	before := testutil.CacheFiles(t, s)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	require.Equal(t, before, testutil.CacheFiles(t, s), "a second run rewrites no cache byte")

	require.NoError(t, vm.Handle.LinkDel(mustNL(t, vm, "eth0")))
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	eth0 := mustNL(t, pod.Pod, "eth0")
	require.Equal(t, "veth", eth0.Type())
	require.Equal(t, pod.PodMAC.String(), eth0.Attrs().HardwareAddr.String())
	addrs, err = h.AddrList(eth0, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	routes, err := h.RouteList(eth0, netlink.FAMILY_V4)
	require.NoError(t, err)
	var def bool
	for _, r := range routes {
		def = def || (r.Dst == nil || r.Dst.String() == "0.0.0.0/0") && r.Gw.Equal(net.ParseIP("10.244.1.1"))
	}
	require.True(t, def, "cleanup restores the default route: %v", routes)
}

// TestSeveralInterfacesKernel: masquerade on eth0 and two IPAM-less
// bridges on net1 and net2 (no dummy needed) in one namespace, each with
// its own bridge, tap, link-local address and records; the masquerade
// path still carries traffic; a re-run changes nothing; cleanup restores
// all three links.
func TestSeveralInterfacesKernel(t *testing.T) {
	pod := testutil.NewPod(t)
	testutil.AddVeth(t, pod.Node, "peer1", pod.Pod, "net1", 1400)
	testutil.AddVeth(t, pod.Node, "peer2", pod.Pod, "net2", 9000)
	vmi := testutil.LoadVMI(t, `
metadata: {name: several, namespace: default, uid: `+uid+`}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{port: 80}]}
      - {name: blue, bridge: {}}
      - {name: red, bridge: {}}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue-net}}
  - {name: red, multus: {networkName: red-net}}
`)
	s := realRun(t, vmi, pod)
	for _, c := range []struct {
		iface, pod, bridge, tap, addr string
		mtu                           int
	}{
		{"default", "eth0", "k6t-eth0", "tap0", "10.0.2.1/24", 1440},
		{"blue", "net1", "k6t-net1", "tap1", "169.254.75.11/32", 1400},
		{"red", "net2", "k6t-net2", "tap2", "169.254.75.12/32", 9000},
	} {
		rec, err := s.ReadInterface(uid, c.iface)
		require.NoError(t, err)
		require.Equal(t, c.bridge, rec.Bridge)
		require.Equal(t, c.tap, rec.Tap)
		require.Equal(t, c.mtu, rec.MTU)
		br := mustNL(t, pod.Pod, c.bridge)
		require.Equal(t, c.mtu, br.Attrs().MTU)
		addrs, err := pod.Pod.Handle.AddrList(br, netlink.FAMILY_V4)
		require.NoError(t, err)
		require.Len(t, addrs, 1)
		require.Equal(t, c.addr, addrs[0].IPNet.String())
		require.Equal(t, br.Attrs().Index, mustNL(t, pod.Pod, c.tap).Attrs().MasterIndex)
		if c.iface != "default" {
			require.Equal(t, br.Attrs().Index, mustNL(t, pod.Pod, c.pod).Attrs().MasterIndex)
		}
	}
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	vm := vmNS(t, pod.Pod, rec.Bridge, rec.MAC, rec.IPv4, rec.Gateway)
	testutil.ServeSource(t, vm, "tcp4", "0.0.0.0:80")
	_, err = testutil.DialSource(pod.Node, "tcp4", "10.244.1.7:80", 1)
	require.NoError(t, err)

	before := testutil.CacheFiles(t, s)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	require.Equal(t, before, testutil.CacheFiles(t, s))

	require.NoError(t, vm.Handle.LinkDel(mustNL(t, vm, "eth0")))
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
	links, err := pod.Pod.Handle.LinkList()
	require.NoError(t, err)
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
		require.Zero(t, l.Attrs().MasterIndex, l.Attrs().Name)
	}
	require.ElementsMatch(t, []string{"lo", "eth0", "net1", "net2"}, names)
}

// TestMasqueradeDualStackKernel: with an IPv6 address on the pod link,
// masquerade also sets up fd10:0:2::1/120 on the bridge and the ip6 NAT
// table; an emulated VM at fd10:0:2::2 is reached from outside on the
// declared port and reaches an outside server as the pod's IPv6 address.
func TestMasqueradeDualStackKernel(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{IPv6: "fd00:10:244:1::7/64", GatewayV6: "fd00:10:244:1::1"})
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	s := realRun(t, vmi, pod)
	rec, err := s.ReadInterface(uid, "default")
	require.NoError(t, err)
	require.Equal(t, netip.MustParsePrefix("fd10:0:2::2/120"), rec.IPv6)
	require.Equal(t, netip.MustParseAddr("fd10:0:2::1"), rec.GatewayIPv6)
	br := mustNL(t, pod.Pod, "k6t-eth0")
	addrs, err := pod.Pod.Handle.AddrList(br, netlink.FAMILY_V6)
	require.NoError(t, err)
	var global []string
	for _, a := range addrs {
		if a.IP.IsGlobalUnicast() {
			global = append(global, a.IPNet.String())
		}
	}
	require.Equal(t, []string{"fd10:0:2::1/120"}, global)

	vm := vmNS(t, pod.Pod, rec.Bridge, rec.MAC, rec.IPv4, rec.Gateway)
	l := mustNL(t, vm, "eth0")
	v6, err := netlink.ParseAddr(rec.IPv6.String())
	require.NoError(t, err)
	v6.Flags = unix.IFA_F_NODAD
	require.NoError(t, vm.Handle.AddrAdd(l, v6))
	require.NoError(t, vm.Handle.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IP(rec.GatewayIPv6.AsSlice())}))

	testutil.ServeSource(t, vm, "tcp6", "[::]:80")
	testutil.ServeSource(t, pod.Node, "tcp6", "[fd00:10:244:1::1]:8000")
	_, err = testutil.DialSource(pod.Node, "tcp6", "[fd00:10:244:1::7]:80", 3)
	require.NoError(t, err, "declared port over IPv6 reaches the VM")
	seen, err := testutil.DialSource(vm, "tcp6", "[fd00:10:244:1::1]:8000", 3)
	require.NoError(t, err, "the VM reaches the outside over IPv6")
	require.Equal(t, "fd00:10:244:1::7", seen, "the outside sees the pod's IPv6 address")
	seen, err = testutil.DialSource(vm, "tcp4", "10.244.1.1:8001", 1)
	_ = seen
	require.Error(t, err, "nothing listens on 8001: the check above is not vacuous")
}
