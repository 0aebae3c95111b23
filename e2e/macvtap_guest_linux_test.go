package e2e

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
	"github.com/virtnet/virtnet/macvtap/dpserver"
	"github.com/virtnet/virtnet/macvtap/plugin"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/dhcp"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// macvtapGuestVMI is the launcher's VMI: one macvtap interface on the
// Multus network of the device plugin's resource.
const macvtapGuestVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: macvtap-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000000d1
spec:
  domain:
    resources:
      requests:
        memory: 192Mi
    devices:
      interfaces: [{name: lan, macvtap: {}, macAddress: "02:5a:00:00:00:d1"}]
  networks: [{name: lan, multus: {networkName: macvtapnetwork}}]
`

// The lower device's network: the peer (a namespace at the far end of the
// veth the macvtap sits on) is its DHCP server and the guest's ping target.
var (
	macvtapPeerIP  = netip.MustParsePrefix("192.168.77.1/24")
	macvtapGuestIP = netip.MustParsePrefix("192.168.77.2/24")
)

// TestMacvtapGuestFromAllocate is the macvtap system from the kubelet's
// Allocate to a running guest, in the kernel VM (macvtap, and libvirt and
// QEMU nested under TCG from the host's root): the device plugin daemon
// advertises the resource of a veth lower device whose other end is a
// peer namespace (the node's LAN); Allocate creates the macvtap; the
// macvtap CNI plugin given that deviceID (as Multus passes it) moves it
// into the launcher pod; phase1 and phase2 render the domain; libvirt
// boots a busybox guest on it. The guest takes its address by DHCP from
// the peer (a server on the LAN, as a real one would be: nothing of
// virtnet serves DHCP on a macvtap, and the exchange proves broadcast
// both ways through the macvtap), pings the peer and reaches its TCP
// server, which sees the guest's address as the source.
func TestMacvtapGuestFromAllocate(t *testing.T) {
	if raceDetector {
		// One nested guest under -race (TestBridgeGuestCNI's); the chain
		// up to the domain runs under -race in dpserver's
		// TestAllocateChainInVM.
		t.Log("race build: the macvtap guest runs in the build without -race")
		return
	}
	t.Parallel() // beside the other kernel VMs: each runs on one host core
	if kernelvm.DelegateWith(t, kernelvm.Options{
		Needs: []string{"veth", "macvtap", "tun"},
		// Always: a macvtap's character device is /dev/tap<ifindex>, one
		// devtmpfs name for the macvtaps of every network namespace; on a
		// host where other tests (other packages, in parallel) make
		// macvtaps in their own namespaces, libvirt may open another
		// namespace's tap4 (seen: 2 of 7 runs on the host got no lease).
		// The kernel VM has its own /dev.
		Always:    true,
		HostRoot:  true,
		MemoryMiB: 1536,
		Timeout:   10 * time.Minute,
		CacheDir:  kernelVMCapsCacheDir(),
		Env:       []string{"VIRTNET_KERNELVM_DIR"},
	}) {
		return
	}
	assets := requireGuest(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), guestTimeout)
	t.Cleanup(cancel)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))

	node := testutil.NewNS(t, "vn-mvnode")
	pod := testutil.NewNS(t, "vn-mvpod")
	peer := testutil.NewNS(t, "vn-mvpeer")
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = "lower0", 1500
	require.NoError(t, node.Handle.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: "lan0"}))
	lan, err := node.Handle.LinkByName("lan0")
	require.NoError(t, err)
	peerNS, err := netns.GetFromPath(peer.Path)
	require.NoError(t, err)
	defer peerNS.Close()
	require.NoError(t, node.Handle.LinkSetNsFd(lan, int(peerNS)))
	lower, err := node.Handle.LinkByName("lower0")
	require.NoError(t, err)
	require.NoError(t, node.Handle.LinkSetUp(lower))
	lan, err = peer.Handle.LinkByName("lan0")
	require.NoError(t, err)
	require.NoError(t, peer.Handle.AddrAdd(lan, &netlink.Addr{IPNet: prefixNet(macvtapPeerIP)}))
	require.NoError(t, peer.Handle.LinkSetUp(lan))

	// The device plugin daemon on the node, and Allocate as the kubelet
	// calls it for the launcher pod.
	kernel, err := dpserver.NewNetlinkKernel(node.Path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = kernel.Close() })
	dir := t.TempDir()
	regs := startRegistration(t, filepath.Join(dir, "kubelet.sock"))
	conf, err := deviceplugin.ParseConfig([]byte(`[{"name":"lan","lowerDevice":"lower0","mode":"bridge","capacity":2}]`))
	require.NoError(t, err)
	d, err := dpserver.New(dpserver.Config{Resources: conf, Kernel: kernel, Dir: dir, PodResourcesSocket: "-", Log: log})
	require.NoError(t, err)
	dctx, dcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	t.Cleanup(func() { dcancel(); <-done })
	var reg *pluginapi.RegisterRequest
	select {
	case reg = <-regs:
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not register within 30s")
	}
	require.Equal(t, "macvtap.network.kubevirt.io/lan", reg.GetResourceName())
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, reg.GetEndpoint()), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	resp, err := pluginapi.NewDevicePluginClient(conn).Allocate(ctx, &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"lanMvp0"}}}})
	require.NoError(t, err)
	deviceID := resp.GetContainerResponses()[0].GetEnvs()[dpserver.EnvName("lan")]
	require.Equal(t, "lanMvp0", deviceID)
	_, err = node.Handle.LinkByName(macvtap.HostLinkName(deviceID))
	require.NoError(t, err, "Allocate made the host macvtap")

	// Multus: the NetworkAttachmentDefinition's config plus the deviceID.
	p := &plugin.Plugin{HostNetNS: node.Path, Log: log}
	p.Stdout = &strings.Builder{}
	args := &skel.CmdArgs{ContainerID: "ctr-mv", Netns: pod.Path, IfName: "net1",
		StdinData: []byte(`{"cniVersion":"1.1.0","name":"macvtapnetwork","type":"macvtap","deviceID":"` + deviceID + `"}`),
		Args:      "IgnoreUnknown=1;MAC=02:5a:00:00:00:d1"}
	require.NoError(t, p.Add(args), "CNI ADD")
	t.Cleanup(func() { require.NoError(t, p.Del(args), "CNI DEL") })

	// The LAN's DHCP server and a TCP server on the peer.
	mac, err := net.ParseMAC("02:5a:00:00:00:d1")
	require.NoError(t, err)
	srv, err := dhcp.NewServer(&dhcp.Config{Interface: "lan", Bridge: "lan0", MAC: mac, Address: macvtapGuestIP,
		Router: macvtapPeerIP.Addr(), ServerID: macvtapPeerIP.Addr(), MTU: 1500, Lease: time.Hour}, log, dhcp.WithNetNS(peer.Path))
	require.NoError(t, err)
	sctx, scancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx) }()
	t.Cleanup(func() { scancel(); <-served })
	select {
	case <-srv.Ready():
	case err := <-served:
		t.Fatalf("DHCP server on the peer: %v", err)
	}
	peerAddr, peerSeen := serveSource(t, peer, net.IP(macvtapPeerIP.Addr().AsSlice()))

	// phase1 and phase2, as virt-handler and the launcher run them.
	vmi, err := api.Load([]byte(macvtapGuestVMI))
	require.NoError(t, err)
	work, err := os.MkdirTemp("", "vn-e2e-mv-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	store, err := cache.New(filepath.Join(work, "cache"))
	require.NoError(t, err)
	require.NoError(t, phase1.Run(ctx, vmi, pod.Path, store, phase1.Options{Logger: log}))
	dom, err := phase2.Domain(ctx, vmi, store, phase2.Options{Render: binding.RenderOptions{}, Build: domxml.Options{
		PrivateDir: filepath.Join(work, "private"), EphemeralDir: filepath.Join(work, "ephemeral"),
		ContainerDiskDir: filepath.Join(work, "container-disks"), EmptyDiskDir: filepath.Join(work, "empty-disks"),
	}})
	require.NoError(t, err)
	require.Len(t, dom.Devices.Interfaces, 1)
	nic := dom.Devices.Interfaces[0]
	require.NotNil(t, nic.Source.Ethernet, "type='ethernet' on the macvtap")
	require.Equal(t, "net1", nic.Target.Dev)

	// The busybox guest.
	consoleLog := filepath.Join(work, "console.log")
	initrd := filepath.Join(work, "initramfs.cpio")
	var mods []string
	for _, m := range guestModules {
		mods = append(mods, filepath.Join(assets, "modules", m+".ko"))
	}
	require.NoError(t, writeInitramfs(initrd, guestFiles{
		busybox: filepath.Join(assets, "busybox"),
		modules: mods,
		files:   guestFilesFor(guestScript{modules: mods, ping: macvtapPeerIP.Addr().String(), node: peerAddr}, nil),
	}))
	forTCG(dom, guestKernel(assets), initrd, consoleLog)
	xml, err := dom.Marshal()
	require.NoError(t, err)
	domainXML := filepath.Join(work, "domain.xml")
	require.NoError(t, os.WriteFile(domainXML, []byte(xml), 0o644))
	g := &guest{t: t, ctx: ctx, vmi: vmi, store: store, log: log, nodeSeen: peerSeen, start: time.Now()}
	g.v = startVirtQemuRun(t, filepath.Join(work, "libvirt"), domainXML, pod.Path)
	g.c = &console{path: consoleLog}
	t.Cleanup(func() {
		if t.Failed() {
			_ = g.c.poll()
			t.Logf("guest console:\n%s", strings.Join(g.c.lines, "\n"))
		}
	})
	g.wait("init")
	g.v.saveCaps(t)
	line := g.wait("lease", "lease-failed")
	require.True(t, strings.HasPrefix(line, "lease "), "guest: %s", line)
	l := g.lease()
	require.Equal(t, macvtapGuestIP.Addr().String(), l["ip"], "the peer's DHCP lease")
	require.Equal(t, "24", l["mask"])
	require.Equal(t, macvtapPeerIP.Addr().String(), l["serverid"])
	require.Contains(t, g.wait("addr"), macvtapGuestIP.String()+" mtu=1500")
	require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
	g.requireSource(net.IP(macvtapGuestIP.Addr().AsSlice()))
	g.done()
	t.Logf("macvtap guest from Allocate: wall time %s", time.Since(began).Round(time.Second))
}

// prefixNet is p as a *net.IPNet (the address with its prefix length).
func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// registration is the kubelet's Registration service, as far as the
// device plugin daemon needs it: each registration goes to the channel.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	regs chan *pluginapi.RegisterRequest
}

func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	select {
	case r.regs <- req:
	default:
	}
	return &pluginapi.Empty{}, nil
}

// startRegistration serves the Registration service on sock.
func startRegistration(t *testing.T, sock string) <-chan *pluginapi.RegisterRequest {
	t.Helper()
	r := &registration{regs: make(chan *pluginapi.RegisterRequest, 4)}
	s := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(s, r)
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return r.regs
}
