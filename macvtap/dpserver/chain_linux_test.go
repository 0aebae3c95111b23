package dpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
	"github.com/virtnet/virtnet/macvtap/plugin"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const chainVMI = `
metadata: {name: vmi-macvtap, namespace: default, uid: 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1}
spec:
  domain:
    devices:
      interfaces: [{name: macvtap, macvtap: {}, macAddress: "02:5a:00:00:00:08"}]
  networks: [{name: macvtap, multus: {networkName: macvtapnetwork}}]
`

// TestAllocateChainInVM is the macvtap system from the kubelet's Allocate
// on (in the kernel VM: the host kernel has no macvtap): the daemon, with
// the real kernel, advertises a dummy lower device's resource, marks it
// unhealthy while the lower device is down, creates the macvtap on
// Allocate; the macvtap CNI plugin given that deviceID (as Multus passes
// it) moves it into a fresh pod; phase1 and phase2 make the domain
// interface of it; DEL leaves the node as it was.
func TestAllocateChainInVM(t *testing.T) {
	if kernelvm.Delegate(t, "dummy", "macvtap") {
		return
	}
	testutil.RequireRoot(t)
	host := testutil.NewNS(t, "vn-dpnode")
	pod := testutil.NewNS(t, "vn-dppod")
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU, la.TxQLen = "lower0", 1500, 500
	require.NoError(t, host.Handle.LinkAdd(&netlink.Dummy{LinkAttrs: la}))
	lower, err := host.Handle.LinkByName("lower0")
	require.NoError(t, err)
	require.NoError(t, host.Handle.LinkSetUp(lower))

	kernel, err := NewNetlinkKernel(host.Path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = kernel.Close() })
	dir := t.TempDir()
	kubelet := startKubelet(t, filepath.Join(dir, "kubelet.sock"))
	conf, err := deviceplugin.ParseConfig([]byte(`[{"name":"lower0","lowerDevice":"lower0","mode":"vepa","capacity":4}]`))
	require.NoError(t, err)
	d, err := New(Config{Resources: conf, Kernel: kernel, Dir: dir, PodResourcesSocket: "-", Poll: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	reg := kubelet.registration(t)
	require.Equal(t, "macvtap.network.kubevirt.io/lower0", reg.GetResourceName())
	dp := dialPlugin(t, dir, reg.GetEndpoint())

	lw, err := dp.ListAndWatch(ctx, &pluginapi.Empty{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"lower0Mvp0": "Healthy", "lower0Mvp1": "Healthy", "lower0Mvp2": "Healthy", "lower0Mvp3": "Healthy"}, recvDevices(t, lw))
	require.NoError(t, host.Handle.LinkSetDown(lower))
	require.Equal(t, "Unhealthy", recvDevices(t, lw)["lower0Mvp0"], "lower device down")
	require.NoError(t, host.Handle.LinkSetUp(lower))
	require.Equal(t, "Healthy", recvDevices(t, lw)["lower0Mvp0"], "lower device up again")

	// Allocate, as the kubelet calls it for the launcher pod.
	resp, err := dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"lower0Mvp2"}}}})
	require.NoError(t, err)
	cresp := resp.GetContainerResponses()[0]
	deviceID := cresp.GetEnvs()[EnvName("lower0")]
	require.Equal(t, "lower0Mvp2", deviceID)
	hostLink, err := host.Handle.LinkByName(macvtap.HostLinkName(deviceID))
	require.NoError(t, err, "Allocate made the host macvtap")
	mv, ok := hostLink.(*netlink.Macvtap)
	require.True(t, ok, "%s is a %s", hostLink.Attrs().Name, hostLink.Type())
	require.Equal(t, netlink.MACVLAN_MODE_VEPA, mv.Mode)
	require.Equal(t, lower.Attrs().Index, mv.ParentIndex)
	require.Equal(t, 500, mv.TxQLen, "the lower device's txqueuelen")
	require.Equal(t, "/dev/tap"+itoa(mv.Index), cresp.GetDevices()[0].GetHostPath())

	// Multus: the NetworkAttachmentDefinition's config plus the deviceID
	// of the pod's resource.
	p := &plugin.Plugin{HostNetNS: host.Path, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	var out bytes.Buffer
	p.Stdout = &out
	cniConf := `{"cniVersion":"1.1.0","name":"macvtapnetwork","type":"macvtap","mtu":1480,"deviceID":"` + deviceID + `"}`
	args := &skel.CmdArgs{ContainerID: "ctr-1", Netns: pod.Path, IfName: "net1", StdinData: []byte(cniConf),
		Args: "IgnoreUnknown=1;MAC=02:5a:00:00:00:08"}
	require.NoError(t, p.Add(args), "CNI ADD")
	var res struct {
		Interfaces []struct{ Name, Mac string }
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &res))
	require.Equal(t, "02:5a:00:00:00:08", res.Interfaces[0].Mac)
	_, err = host.Handle.LinkByName(macvtap.HostLinkName(deviceID))
	require.Error(t, err, "the macvtap left the node")

	vmi, err := api.Load([]byte(chainVMI))
	require.NoError(t, err)
	store, err := cache.New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Path, store, phase1.Options{}))
	link, err := pod.Handle.LinkByName("net1")
	require.NoError(t, err)
	dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{Render: binding.RenderOptions{}})
	require.NoError(t, err)
	require.Len(t, dom.Devices.Interfaces, 1)
	iface := dom.Devices.Interfaces[0]
	require.NotNil(t, iface.Source.Ethernet, "type='ethernet'")
	require.Equal(t, "net1", iface.Target.Dev)
	require.Equal(t, link.Attrs().HardwareAddr.String(), iface.MAC.Address)
	require.Equal(t, uint(1480), iface.MTU.Size)

	require.NoError(t, p.Del(args), "CNI DEL")
	links, err := host.Handle.LinkList()
	require.NoError(t, err)
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs().Name)
	}
	require.ElementsMatch(t, []string{"lo", "lower0"}, names, "nothing left on the node")

	// A second allocation of the same device makes a new macvtap.
	_, err = dp.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{deviceID}}}})
	require.NoError(t, err)
	_, err = host.Handle.LinkByName(macvtap.HostLinkName(deviceID))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(macvtap.HostLinkName(deviceID), "mvt"))
}

func itoa(i int) string { return strconv.Itoa(i) }
