package bridge_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2/dhcp"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// The guest is stood in for by a namespace whose eth0 is a veth joined to
// the pod's bridge, running busybox's udhcpc (a real DHCP client) against
// our server on that bridge. The event script applies what it got the
// way a distribution's script does: the address with its mask, then the
// classless static routes (option 121) in order, or else the router
// (option 3); then it records the environment and the routing table.
const guestScript = `#!/bin/sh
env > "$OUT.$1"
[ "$1" = bound ] || exit 0
bb="$BUSYBOX"
$bb ip addr add "$ip/$mask" dev "$interface" || exit 1
$bb ip link set "$interface" up || exit 1
if [ -n "$staticroutes" ]; then
	set -- $staticroutes
	while [ $# -ge 2 ]; do
		if [ "$2" = 0.0.0.0 ]; then
			$bb ip route add "$1" dev "$interface" || exit 1
		else
			$bb ip route add "$1" via "$2" dev "$interface" || exit 1
		fi
		shift 2
	done
elif [ -n "$router" ]; then
	set -- $router
	$bb ip route add default via "$1" dev "$interface" || exit 1
fi
$bb ip -4 route show > "$OUT.routes"
`

// guestView is what udhcpc received and what the guest's routing table
// became.
type guestView struct {
	env    map[string]string
	routes []string
	ns     *testutil.NS
}

// runGuest serves DHCP for the interface's record on the pod's bridge,
// makes the guest namespace with the VM's MAC and runs udhcpc in it once.
func runGuest(t *testing.T, vmi *api.VMI, pod *testutil.NS, rec *cache.Interface) *guestView {
	t.Helper()
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		testutil.Skip(t, "busybox (Debian package busybox-static) for udhcpc")
	}
	var iface *api.Interface
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		if vmi.Spec.Domain.Devices.Interfaces[i].Name == rec.Interface {
			iface = &vmi.Spec.Domain.Devices.Interfaces[i]
		}
	}
	cfg, err := dhcp.NewConfigFor(vmi, iface, rec, nil, dhcp.Service{IPv4: true, IPv6: true, RequireMAC: true})
	require.NoError(t, err)
	srv, err := dhcp.NewServer(cfg, slog.New(slog.NewTextHandler(tWriter{t}, nil)), dhcp.WithNetNS(pod.Path))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	select {
	case <-srv.Ready():
	case err := <-done:
		done <- err
		require.NoError(t, err)
	}

	g := testutil.NewNS(t, "vn-guest")
	testutil.AddVeth(t, pod, "vmport", g, "eth0", rec.MTU)
	port, err := pod.Handle.LinkByName("vmport")
	require.NoError(t, err)
	br, err := pod.Handle.LinkByName(rec.Bridge)
	require.NoError(t, err)
	require.NoError(t, pod.Handle.LinkSetMaster(port, br))
	eth0, err := g.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.NoError(t, g.Handle.LinkSetDown(eth0))
	require.NoError(t, g.Handle.LinkSetHardwareAddr(eth0, rec.MAC.HardwareAddr()))
	require.NoError(t, g.Handle.LinkSetUp(eth0))

	dir := t.TempDir()
	script := filepath.Join(dir, "udhcpc.sh")
	require.NoError(t, os.WriteFile(script, []byte(guestScript), 0o755))
	out := filepath.Join(dir, "env")
	cmd := exec.Command(busybox, "udhcpc", "-i", "eth0", "-s", script, "-f", "-q", "-n",
		"-t", "5", "-T", "1", "-A", "1", "-O", "staticroutes")
	cmd.Env = append(os.Environ(), "OUT="+out, "BUSYBOX="+busybox)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, g.Do(cmd.Run), "udhcpc: %s", log.String())
	t.Logf("udhcpc: %s", log.String())

	v := &guestView{env: readEnv(t, out+".bound"), ns: g}
	b, err := os.ReadFile(out + ".routes")
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			v.routes = append(v.routes, l)
		}
	}
	t.Logf("guest got router=%q staticroutes=%q ip=%s/%s; routes: %q",
		v.env["router"], v.env["staticroutes"], v.env["ip"], v.env["mask"], v.routes)
	return v
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	require.NoError(t, sc.Err())
	return env
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

const guestUID = "6a1a3c56-0c0e-4b8e-9d55-4a9c8b2a1f01"

// secondaryVMI has one bridge interface on a Multus network (pod link
// net1), as whereabouts or host-local networks are attached.
const secondaryVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-blue, namespace: default, uid: ` + guestUID + `}
spec:
  domain:
    devices:
      interfaces: [{name: blue, bridge: {}}]
  networks: [{name: blue, multus: {networkName: blue-net}}]
`

// podVMI has the bridge binding on the pod network (eth0).
const podVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-ptp, namespace: default, uid: ` + guestUID + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, bridge: {}}]
  networks: [{name: default, pod: {}}]
`

func runPhase1(t *testing.T, yaml string, pod *testutil.NS, iface string) (*api.VMI, *cache.Interface) {
	t.Helper()
	vmi, err := api.Load([]byte(yaml))
	require.NoError(t, err)
	store, err := cache.New(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Path, store, phase1.Options{}))
	rec, err := store.ReadInterface(vmi.Metadata.UID, iface)
	require.NoError(t, err)
	return vmi, rec
}

// secondaryPod makes a pod whose net1 (a veth to a node namespace
// holding 192.168.1.1/24) has 192.168.1.5/24 and the routes given.
func secondaryPod(t *testing.T, routes ...*netlink.Route) (pod, node *testutil.NS) {
	t.Helper()
	pod, node = testutil.NewNS(t, "vn-pod"), testutil.NewNS(t, "vn-node")
	testutil.AddVeth(t, node, "veth-pod", pod, "net1", 1500)
	for _, x := range []struct {
		ns   *testutil.NS
		link string
		addr string
	}{{node, "veth-pod", "192.168.1.1/24"}, {pod, "net1", "192.168.1.5/24"}} {
		l, err := x.ns.Handle.LinkByName(x.link)
		require.NoError(t, err)
		a, err := netlink.ParseAddr(x.addr)
		require.NoError(t, err)
		require.NoError(t, x.ns.Handle.AddrAdd(l, a))
		require.NoError(t, x.ns.Handle.LinkSetUp(l))
	}
	net1, err := pod.Handle.LinkByName("net1")
	require.NoError(t, err)
	for _, r := range routes {
		r.LinkIndex = net1.Attrs().Index
		require.NoError(t, pod.Handle.RouteAdd(r))
	}
	return pod, node
}

// TestGuestRouting runs the bridge binding's phase1 on pod links shaped as
// real CNIs leave them (the dummy makes it run in the kernel VM), then a
// real DHCP client in a guest namespace on the pod's bridge, and checks
// what the guest received and what it can reach.
func TestGuestRouting(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test whose concurrent part, the DHCP server, runs under -race on this kernel in phase2/dhcp's tests and in TestLivePlugDHCP's and TestDHCPFollowsTheVMI's kernel VMs")
	files := cniPlugins(t)
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		Files: files, Env: []string{testutil.CNIPluginDirEnv}}) {
		return
	}

	// #12.1: host-local without "gateway" (or whereabouts): the address
	// and its connected route only. KubeVirt serves the address with no
	// router option; so do we (phase1 used to fail: "no gateway address").
	t.Run("no gateway", func(t *testing.T) {
		pod, node := secondaryPod(t)
		vmi, rec := runPhase1(t, secondaryVMI, pod, "blue")
		g := runGuest(t, vmi, pod, rec)
		require.Equal(t, "192.168.1.5", g.env["ip"])
		require.Equal(t, "24", g.env["mask"])
		require.NotContains(t, g.env, "router")
		require.NotContains(t, g.env, "staticroutes")
		require.Equal(t, []string{"192.168.1.0/24 dev eth0 scope link src 192.168.1.5"}, g.routes)
		testutil.ServeSource(t, node, "tcp4", "192.168.1.1:8000")
		seen, err := testutil.DialSource(g.ns, "tcp4", "192.168.1.1:8000", 3)
		require.NoError(t, err, "the guest reaches its on-link neighbour")
		require.Equal(t, "192.168.1.5", seen)
	})

	// #22.5: a VM that comes to this pod with status.interfaces[].mac
	// (after a migration; the pod link's MAC is another) keeps that MAC:
	// the DHCP server answers it (KubeVirt's bug #16696).
	t.Run("status MAC", func(t *testing.T) {
		pod, _ := secondaryPod(t)
		const mac = "02:16:69:60:00:01"
		vmi, rec := runPhase1(t, secondaryVMI+"status: {interfaces: [{name: blue, mac: \""+mac+"\", infoSource: domain}]}\n", pod, "blue")
		require.Equal(t, mac, recText(rec.MAC))
		g := runGuest(t, vmi, pod, rec)
		require.Equal(t, "192.168.1.5", g.env["ip"], "a lease for the status MAC")
	})

	// #12.2: one static route on a secondary network and no default
	// route: option 121 with that route, no option 3, and no default
	// route in the guest.
	t.Run("static route only", func(t *testing.T) {
		_, dst, err := net.ParseCIDR("192.168.0.0/16")
		require.NoError(t, err)
		pod, _ := secondaryPod(t, &netlink.Route{Dst: dst, Gw: net.ParseIP("192.168.1.1")})
		vmi, rec := runPhase1(t, secondaryVMI, pod, "blue")
		g := runGuest(t, vmi, pod, rec)
		require.NotContains(t, g.env, "router", "no option 3: the pod had no default route on net1")
		require.Equal(t, "192.168.0.0/16 192.168.1.1", g.env["staticroutes"])
		require.Equal(t, []string{
			"192.168.0.0/16 via 192.168.1.1 dev eth0",
			"192.168.1.0/24 dev eth0 scope link src 192.168.1.5",
		}, g.routes)
	})

	// #12.3: a kindnet-like pod network made by the real ptp plugin
	// (host-local IPAM), and a second pod on the same node. ptp routes
	// the pod's subnet through the gateway; the guest gets that routing
	// (address /32, gateway on-link, subnet and default via the gateway)
	// and reaches the second pod, which sees the pod IP.
	t.Run("ptp", func(t *testing.T) {
		podA := testutil.NewKindnetPod(t)
		podB := podA.Neighbor(t)
		require.Equal(t, "10.244.2.2/24", podA.PodNet.String())
		require.Equal(t, "10.244.2.3", podB.PodIP.String())

		vmi, rec := runPhase1(t, podVMI, podA.Pod, "default")
		g := runGuest(t, vmi, podA.Pod, rec)
		testutil.ServeSource(t, podB.Pod, "tcp4", "10.244.2.3:8000")
		seen, err := testutil.DialSource(g.ns, "tcp4", "10.244.2.3:8000", 3)
		require.NoError(t, err, "the guest reaches the second pod on the node")
		require.Equal(t, "10.244.2.2", seen, "the second pod sees the pod IP")
		require.Equal(t, "10.244.2.2", g.env["ip"])
		require.Equal(t, "32", g.env["mask"])
		require.Equal(t, "10.244.2.1", g.env["router"])
		require.Equal(t, "10.244.2.1/32 0.0.0.0 10.244.2.0/24 10.244.2.1 0.0.0.0/0 10.244.2.1", g.env["staticroutes"])
		require.Equal(t, []string{
			"default via 10.244.2.1 dev eth0",
			"10.244.2.0/24 via 10.244.2.1 dev eth0",
			"10.244.2.1 dev eth0 scope link",
		}, g.routes)

	})
}

// cniPlugins builds the CNI reference plugins outside the kernel VM
// (testutil.CNIPluginDir) and returns them as kernelvm files at the same
// paths, with testutil.CNIPluginDirEnv naming that directory, inside the
// VM as here.
func cniPlugins(t *testing.T) map[string]string {
	t.Helper()
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
