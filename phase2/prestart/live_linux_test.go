//go:build linux

package prestart_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const liveUID = "7f3c0d52-0000-4000-8000-000000000023"

// liveVMI is a KubeVirt 1.x VMI (hashed names): masquerade on the pod
// network, and blue's entry when blue is not "" (a suffix of the bridge
// interface's entry, e.g. ", state: absent"; "-" for none).
func liveVMI(t *testing.T, blue string) *api.VMI {
	t.Helper()
	y := `
kind: VirtualMachineInstance
metadata: {name: live, namespace: ns1, uid: ` + liveUID + `, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    machine: {type: q35}
    devices:
      interfaces:
      - {name: default, masquerade: {}}
`
	nets := "  networks:\n  - {name: default, pod: {}}\n"
	if blue != "" {
		y += "      - {name: blue, bridge: {}" + strings.TrimPrefix(blue, "-") + "}\n"
		nets += "  - {name: blue, multus: {networkName: blue-net}}\n"
	}
	return testutil.LoadVMI(t, y+nets)
}

// TestLivePlugDHCP is a launcher's live update on this kernel, without a
// guest (inside the kernel VM when this kernel has no dummy links): phase1
// and the hook start a VM with masquerade (its DHCP server bound; KubeVirt
// v1.9.0's spare root ports reserved after the interfaces); a CNI plugin
// adds blue's pod link (with an address) to the running pod; phase1 plugs
// blue; the hook's Running.Sync (phase2.Sync with its render choices and
// DHCP servers) returns blue's device to attach (type ethernet, as chosen
// at start) and starts its DHCP server (bound, serving the pod link's
// address) beside eth0's; then blue is unplugged: phase1 restores its pod
// link, Sync returns the device to detach and stops blue's server alone.
// It logs the time of each step.
func TestLivePlugDHCP(t *testing.T) {
	// dummy: the bridge binding with IPAM keeps the pod's address on one;
	// nf_tables: masquerade.
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		Modules: []string{"nf_tables", "nft_chain_nat", "nft_nat", "nft_masq", "nft_ct"}}) {
		return
	}
	testutil.RequireRoot(t)
	ctx := context.Background()
	pod := testutil.NewPod(t)
	store, err := cache.New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	require.NoError(t, phase1.Run(ctx, liveVMI(t, ""), pod.Pod.Path, store, phase1.Options{}))
	root := t.TempDir()
	hook := &prestart.Hook{
		VMI: liveVMI(t, ""), Store: store, NetNS: pod.Pod.Path, InterfaceType: "ethernet",
		Dirs: domxml.Options{PrivateDir: filepath.Join(root, "private"), EphemeralDir: filepath.Join(root, "ephemeral"),
			HotplugPorts: domxml.HotplugPortsKubeVirt},
		ResolvConf: filepath.Join(root, "resolv.conf"),
	}
	running, err := hook.Run(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, running.Stop()) })
	require.Len(t, running.Servers(), 1)
	spare, err := domxml.KubeVirtHotplugPorts(hook.VMI, running.Domain())
	require.NoError(t, err)
	require.GreaterOrEqual(t, spare, 3)
	require.Equal(t, spare, domxml.SpareRootPorts(running.Domain()), "KubeVirt's spare root ports, after the interfaces")
	domXML := func() string {
		x, err := running.Domain().Marshal()
		require.NoError(t, err)
		return x
	}

	// Multus adds blue's pod link to the running pod.
	blue := api.HashedPodInterface("blue")
	testutil.AddVeth(t, pod.Node, "veth-blue", pod.Pod, blue, 1400)
	l, err := pod.Pod.Handle.LinkByName(blue)
	require.NoError(t, err)
	addr, err := netlink.ParseAddr("192.168.2.7/24")
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.AddrAdd(l, addr))
	pristine, err := pod.Pod.Handle.LinkByName(blue)
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, phase1.Run(ctx, liveVMI(t, "-"), pod.Pod.Path, store, phase1.Options{}))
	p1 := time.Since(start)
	changes, err := running.Sync(ctx, domXML(), liveVMI(t, "-"))
	require.NoError(t, err)
	plug := time.Since(start)
	require.Len(t, changes, 1)
	require.Equal(t, phase2.OpAttach, changes[0].Op)
	require.Contains(t, changes[0].XML, `<target dev="tap16477688c0e" managed="no">`)
	servers := running.Servers()
	require.Len(t, servers, 2)
	require.Equal(t, "blue", servers[1].Interface)
	require.Equal(t, "192.168.2.7/24", servers[1].Address)
	require.Equal(t, "k6t-16477688c0e", servers[1].Bridge)

	// The launcher attached it (here: added to the domain it holds).
	var attached libvirtxml.DomainInterface
	require.NoError(t, attached.Unmarshal(changes[0].XML))
	dom := running.Domain()
	dom.Devices.Interfaces = append(dom.Devices.Interfaces, attached)
	again, err := running.Sync(ctx, domXML(), liveVMI(t, "-"))
	require.NoError(t, err)
	require.Empty(t, again)
	require.Len(t, running.Servers(), 2, "no second server for blue")

	start = time.Now()
	unplugged := liveVMI(t, ", state: absent")
	require.NoError(t, phase1.Run(ctx, unplugged, pod.Pod.Path, store, phase1.Options{}))
	changes, err = running.Sync(ctx, domXML(), unplugged)
	require.NoError(t, err)
	unplug := time.Since(start)
	require.Len(t, changes, 1)
	require.Equal(t, phase2.OpDetach, changes[0].Op)
	servers = running.Servers()
	require.Len(t, servers, 1)
	require.Equal(t, "default", servers[0].Interface, "eth0's server keeps serving")
	after, err := pod.Pod.Handle.LinkByName(blue)
	require.NoError(t, err)
	require.Equal(t, pristine.Attrs().Index, after.Attrs().Index)
	require.Equal(t, pristine.Attrs().HardwareAddr, after.Attrs().HardwareAddr)
	require.Zero(t, after.Attrs().MasterIndex)
	addrs, err := pod.Pod.Handle.AddrList(after, netlink.FAMILY_V4)
	require.NoError(t, err)
	require.Len(t, addrs, 1)
	require.Equal(t, "192.168.2.7/24", addrs[0].IPNet.String(), "blue's pod link as the CNI left it")
	t.Logf("plug: phase1 %v, with Sync and a bound DHCP server %v; unplug (phase1 and Sync) %v", p1, plug, unplug)
}

// TestLiveFlipReplugs is the flip of item 3 of issue #38 on this kernel:
// a VM started by the hook with masquerade (eth0, DHCP served) and blue
// (bridge binding, no IPAM: no DHCP server). First blue flips: phase1
// unplugs it (state: absent) and plugs it again between two Syncs, a new
// bridge and tap under the same names, the same MAC; the hook's
// Running.Sync sees that the bridge blue was started with is gone and
// returns a replug of blue's device alone (detach, then attach on the new
// tap). Then the whole VMI flips (phase1's Cleanup and Run): both devices
// are replugged and eth0's DHCP server is bound to the new bridge. After
// each replug the next Sync has nothing to do. Before, Sync returned
// nothing: the VM's NICs on dead taps, the DHCP server on a deleted
// bridge.
func TestLiveFlipReplugs(t *testing.T) {
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"bridge", "veth", "tun"},
		Modules: []string{"nf_tables", "nft_chain_nat", "nft_nat", "nft_masq", "nft_ct"}}) {
		return
	}
	testutil.RequireRoot(t)
	ctx := context.Background()
	pod := testutil.NewPod(t)
	blue := api.HashedPodInterface("blue")
	testutil.AddVeth(t, pod.Node, "veth-blue", pod.Pod, blue, 1400)
	store, err := cache.New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	vmi := liveVMI(t, "-")
	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, phase1.Options{}))
	root := t.TempDir()
	hook := &prestart.Hook{
		VMI: vmi, Store: store, NetNS: pod.Pod.Path, InterfaceType: "ethernet",
		Dirs:       domxml.Options{PrivateDir: filepath.Join(root, "private"), EphemeralDir: filepath.Join(root, "ephemeral")},
		ResolvConf: filepath.Join(root, "resolv.conf"),
	}
	running, err := hook.Run(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = running.Stop() })
	require.Len(t, running.Servers(), 1, "eth0's; blue has no IPAM")
	x, err := running.Domain().Marshal()
	require.NoError(t, err)
	sync := func() []string {
		t.Helper()
		changes, err := running.Sync(ctx, x, vmi)
		require.NoError(t, err)
		var out []string
		for _, c := range changes {
			out = append(out, string(c.Op)+" "+c.Interface)
		}
		return out
	}
	require.Empty(t, sync())
	index := func(name string) int {
		t.Helper()
		l, err := pod.Pod.Handle.LinkByName(name)
		require.NoError(t, err)
		return l.Attrs().Index
	}
	blueBridge := "k6t-" + strings.TrimPrefix(blue, "pod")

	// blue flips: absent, then present again.
	before := index(blueBridge)
	require.NoError(t, phase1.Run(ctx, liveVMI(t, ", state: absent"), pod.Pod.Path, store, phase1.Options{}))
	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, phase1.Options{}))
	require.NotEqual(t, before, index(blueBridge), "a new bridge under the old name")
	require.Equal(t, []string{"detach blue", "attach blue"}, sync(), "blue replugged, eth0 left alone")
	require.Empty(t, sync(), "converged")

	// The whole VMI flips.
	before = index("k6t-eth0")
	require.NoError(t, phase1.Cleanup(ctx, vmi, pod.Pod.Path, store, phase1.Options{}))
	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, phase1.Options{}))
	require.NotEqual(t, before, index("k6t-eth0"))
	stale, err := running.DHCP().Stale("default")
	require.NoError(t, err)
	require.True(t, stale, "eth0's DHCP server is on the deleted bridge")
	require.Equal(t, []string{"detach default", "attach default", "detach blue", "attach blue"}, sync())
	stale, err = running.DHCP().Stale("default")
	require.NoError(t, err)
	require.False(t, stale, "eth0's DHCP server is bound to the new bridge")
	require.Len(t, running.Servers(), 1)
	require.Empty(t, sync(), "converged")
}
