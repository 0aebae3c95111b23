package macvtap_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/macvtap/plugin"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const chainVMI = `
metadata: {name: vmi-macvtap, namespace: default, uid: 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0}
spec:
  domain:
    devices:
      interfaces: [{name: macvtap, macvtap: {}, macAddress: "02:5a:00:00:00:07"}]
  networks: [{name: macvtap, multus: {networkName: macvtapnetwork}}]
`

// TestMacvtapChainInVM is the macvtap path end to end on a real kernel
// (inside the kernel VM here): the CNI plugin's ADD puts a macvtap on a
// dummy lower device into a fresh pod namespace, phase1 discovers it and
// writes the cache, phase2 renders an interface whose target and MAC are
// the kernel's; a second ADD is a clean error and DEL leaves nothing.
func TestMacvtapChainInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test of sequential netlink calls; the binding's code runs under -race against the netdriver fake (TestWithNetdriverFake) and its concurrency-bearing callers in macvtap/dpserver's TestAllocateChainInVM")
	if kernelvm.Delegate(t, "dummy", "macvtap") {
		return
	}
	testutil.RequireRoot(t)
	host := testutil.NewNS(t, "vn-node")
	pod := testutil.NewNS(t, "vn-pod")
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU = "lower0", 1500
	require.NoError(t, host.Handle.LinkAdd(&netlink.Dummy{LinkAttrs: la}))
	lower, err := host.Handle.LinkByName("lower0")
	require.NoError(t, err)
	require.NoError(t, host.Handle.LinkSetUp(lower))

	p := &plugin.Plugin{HostNetNS: host.Path, Log: slog.New(slog.DiscardHandler)}
	conf := `{"cniVersion":"1.0.0","name":"macvtapnetwork","type":"macvtap","deviceID":"mvtap0","lowerDevice":"lower0","mtu":1480}`
	args := &skel.CmdArgs{ContainerID: "ctr-1", Netns: pod.Path, IfName: "net1", StdinData: []byte(conf),
		Args: "IgnoreUnknown=1;MAC=02:5a:00:00:00:07"}
	require.NoError(t, p.Add(args), "CNI ADD")
	require.Error(t, p.Add(args), "a second ADD is a clean error")

	vmi, err := api.Load([]byte(chainVMI))
	require.NoError(t, err)
	store, err := cache.New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Path, store, phase1.Options{}))

	link, err := pod.Handle.LinkByName("net1")
	require.NoError(t, err)
	require.Equal(t, "macvtap", link.Type())
	dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{Render: binding.RenderOptions{}})
	require.NoError(t, err)
	require.Len(t, dom.Devices.Interfaces, 1)
	iface := dom.Devices.Interfaces[0]
	require.NotNil(t, iface.Source.Ethernet, "type='ethernet'")
	require.Equal(t, "net1", iface.Target.Dev)
	require.Equal(t, "no", iface.Target.Managed)
	require.Equal(t, link.Attrs().HardwareAddr.String(), iface.MAC.Address)
	require.Equal(t, "02:5a:00:00:00:07", iface.MAC.Address)
	require.Equal(t, uint(1480), iface.MTU.Size)

	require.NoError(t, p.Del(args), "CNI DEL")
	_, err = pod.Handle.LinkByName("net1")
	require.Error(t, err, "DEL removes the macvtap from the pod")
	links, err := host.Handle.LinkList()
	require.NoError(t, err)
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	require.ElementsMatch(t, []string{"lo", "lower0"}, names, "DEL leaves nothing on the node")
	require.NoError(t, p.Del(args), "DEL twice")
}
