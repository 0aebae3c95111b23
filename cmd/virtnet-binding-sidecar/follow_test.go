//go:build linux

package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// KubeVirt v1.9.0's domain and VMI for a virtnet-bridge interface on a
// secondary network, embedded: the kernel VM sees no host files.
var (
	//go:embed testdata/kubevirt-v1.9.0/domain-bridge-secondary.xml
	kubevirtSecondaryDomain []byte
	//go:embed testdata/kubevirt-v1.9.0/vmi-bridge-secondary.json
	kubevirtSecondaryVMI []byte
)

// dhcpSockets counts the UDP sockets bound to port 67 (a DHCPv4 server's)
// in the pod's namespace, as the kernel lists them.
func dhcpSockets(t *testing.T, pod *testutil.Pod) int {
	t.Helper()
	var n int
	require.NoError(t, pod.Pod.Do(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/udp")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 1 && strings.HasSuffix(f[1], ":0043") {
				n++
			}
		}
		return nil
	}))
	return n
}

// TestDHCPFollowsTheVMI: each OnDefineDomain makes the sidecar's DHCP
// servers match the VMI it is given (phase2.DHCPServers.Sync). A bridge
// plugin interface on a secondary network, prepared as the CNI plugin
// prepares it (phase1, the hand-off record on its tap), gets its device and
// a server, which a client with the VM's MAC leases from; a second call
// starts no second server; the interface set state: absent is not rendered
// and its server is stopped (its socket gone); present again, it is served
// again; gone from the VMI, its server is stopped. The bridge binding with
// IPAM needs a dummy link: inside the kernel VM on a kernel without one.
func TestDHCPFollowsTheVMI(t *testing.T) {
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"},
		QEMUArgs: []string{"-cpu", "qemu64,+rdrand"}}) {
		return
	}
	testutil.RequireRoot(t)
	needBinary(t, "busybox")
	ctx := context.Background()
	domain, vmiJSON := kubevirtSecondaryDomain, kubevirtSecondaryVMI
	var kv map[string]any
	require.NoError(t, json.Unmarshal(vmiJSON, &kv))
	uid := kv["metadata"].(map[string]any)["uid"].(string)

	// Multus adds blue's pod link (with its address), the CNI plugin
	// prepares it and leaves the record on its tap.
	pod := testutil.NewPod(t)
	blue := api.HashedPodInterface("blue")
	testutil.AddVeth(t, pod.Node, "veth-blue", pod.Pod, blue, 1400)
	l, err := pod.Pod.Handle.LinkByName(blue)
	require.NoError(t, err)
	addr, err := netlink.ParseAddr("192.168.2.7/24")
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.AddrAdd(l, addr))
	vmi := testutil.LoadVMI(t, fmt.Sprintf(`
kind: VirtualMachineInstance
metadata: {name: vmi-plugin, namespace: default, uid: %s, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    devices:
      interfaces: [{name: blue, bridge: {}}]
  networks: [{name: blue, multus: {networkName: blue-net}}]
`, uid))
	store := testutil.NewStore(t)
	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, phase1.Options{}))
	rec, err := store.ReadInterface(uid, "blue")
	require.NoError(t, err)
	alias, err := kvplugin.Encode(rec)
	require.NoError(t, err)
	require.NoError(t, kvplugin.WriteAlias(pod.Pod.Path, rec.Tap, alias))
	require.NoError(t, pod.Pod.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("67"), 0o644)
	}))

	c, logs, _ := inProcess(t, pod, sidecar.Config{Plugin: kvplugin.PluginBridge})
	started := func() int { return strings.Count(logs.String(), "DHCP server started") }
	stopped := func() int { return strings.Count(logs.String(), "DHCP server stopped") }
	withBlue := func(edit func(iface map[string]any, spec map[string]any)) []byte {
		var v map[string]any
		require.NoError(t, json.Unmarshal(vmiJSON, &v))
		spec := v["spec"].(map[string]any)
		edit(spec["domain"].(map[string]any)["devices"].(map[string]any)["interfaces"].([]any)[0].(map[string]any), spec)
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return b
	}

	out, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	require.Len(t, dom.Devices.Interfaces, 1)
	require.Equal(t, "ua-blue", dom.Devices.Interfaces[0].Alias.Name)
	require.Equal(t, 1, started())
	require.Equal(t, 1, dhcpSockets(t, pod))
	vm := vmPort(t, pod, rec.Bridge, dom.Devices.Interfaces[0].MAC.Address)
	require.Equal(t, "192.168.2.7", lease(t, vm)["ip"])

	again, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	require.Equal(t, out, again)
	require.Equal(t, 1, started(), "one server per interface, started once")

	absent := withBlue(func(iface, _ map[string]any) { iface["state"] = "absent" })
	got, err := c.define(domain, absent)
	require.NoError(t, err)
	require.Equal(t, domain, got, "an absent interface is not rendered")
	require.Equal(t, 1, stopped())
	require.Zero(t, dhcpSockets(t, pod), "the absent interface's server is stopped")

	again, err = c.define(domain, vmiJSON)
	require.NoError(t, err)
	require.Equal(t, out, again)
	require.Equal(t, 2, started(), "present again: served again")
	require.Equal(t, 1, dhcpSockets(t, pod))
	require.Equal(t, "192.168.2.7", lease(t, vm)["ip"])

	gone := withBlue(func(_, spec map[string]any) {
		spec["domain"].(map[string]any)["devices"].(map[string]any)["interfaces"] = []any{}
		spec["networks"] = []any{}
	})
	got, err = c.define(domain, gone)
	require.NoError(t, err)
	require.Equal(t, domain, got)
	require.Equal(t, 2, stopped())
	require.Zero(t, dhcpSockets(t, pod), "an interface gone from the VMI has no server")
}
