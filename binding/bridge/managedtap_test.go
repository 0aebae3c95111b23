package bridge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestManagedTap: KubeVirt 1.x's managedTap attachment through the
// registry (binding: {name: managed-tap}): phase1 builds the bridge
// binding's bridge and tap, phase2 renders an ethernet NIC on the tap,
// and no DHCP server is asked for.
func TestManagedTap(t *testing.T) {
	vmi := testutil.LoadVMI(t, `
kind: VirtualMachineInstance
metadata: {name: mt, namespace: default, uid: 6f4c5d2e-1b3a-4c5d-9e8f-0a1b2c3d4e5f}
spec:
  domain:
    devices:
      interfaces: [{name: default, masquerade: {}}, {name: sec, binding: {name: managed-tap}}]
  networks: [{name: default, pod: {}}, {name: sec, multus: {networkName: blue}}]
`)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}, netdrivertest.SimLink{Name: "net1"})
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, "", s, phase1.Options{Driver: f}))
	for _, name := range []string{"k6t-net1", "tap1", "net1-nic"} {
		_, err := f.LinkByName(name)
		require.NoError(t, err, name)
	}
	items, err := phase2.ReadRecords(context.Background(), vmi, s, phase2.Options{})
	require.NoError(t, err)
	require.Equal(t, bridge.ManagedTapName, items[1].Binding.Method())
	dom := &libvirtxml.Domain{}
	require.NoError(t, phase2.Render(vmi, items, dom, binding.RenderOptions{}))
	nic := dom.Devices.Interfaces[1]
	require.NotNil(t, nic.Source.Ethernet, "rendered on the tap as KubeVirt renders managedTap")
	require.Equal(t, "tap1", nic.Target.Dev)
	require.Equal(t, "ua-sec", nic.Alias.Name)
	_, dhcp := items[1].Binding.(binding.DHCPServer)
	require.False(t, dhcp, "managedTap serves no DHCP")
}
