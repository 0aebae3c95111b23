package registry_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2/dhcp"
)

// TestWhatBindingsNeed pins what each built-in binding tells the launcher
// through the optional interfaces: whether it gets a DHCP server
// (binding.DHCPServer) and its device's alias (binding.DeviceAlias).
func TestWhatBindingsNeed(t *testing.T) {
	tests := []struct {
		method string
		dhcp   bool
		alias  string
	}{
		{api.BindingBridge, true, "ua-net1"},
		{api.BindingMasquerade, true, "ua-net1"},
		{api.BindingSlirp, false, "ua-net1"},
		{api.BindingPasst, false, "ua-net1"},
		{api.BindingMacvtap, false, "ua-net1"},
		{api.BindingSRIOV, false, "ua-sriov-net1"},
		{bridge.ManagedTapName, false, "ua-net1"},
		{api.PluginBridge, true, "ua-net1"},
		{api.PluginMasquerade, true, "ua-net1"},
		{api.PluginSlirp, false, "ua-net1"},
	}
	reg := registry.Default()
	require.Len(t, reg, len(tests), "every built-in binding is in the table")
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			b, err := reg.Lookup(tt.method)
			require.NoError(t, err)
			s, ok := b.(binding.DHCPServer)
			require.Equal(t, tt.dhcp, ok && s.DHCPService(&cache.Interface{Interface: "net1"}).Serves(), "serves DHCP with a record")
			if ok {
				require.False(t, s.DHCPService(nil).Serves(), "no DHCP without a record")
				// What the launcher's server then offers: DHCPv4 and
				// DHCPv6, to the VM's MAC only on a shared bridge.
				got := s.DHCPService(&cache.Interface{Interface: "net1"})
				want := map[string]dhcp.Service{
					api.BindingBridge:     {IPv4: true, IPv6: true, RequireMAC: true},
					api.BindingMasquerade: {IPv4: true, IPv6: true},
					api.PluginBridge:      {IPv4: true, IPv6: true, RequireMAC: true},
					api.PluginMasquerade:  {IPv4: true, IPv6: true},
				}[tt.method]
				require.Equal(t, want, dhcp.Service{IPv4: got.IPv4, IPv6: got.IPv6, RequireMAC: got.RequireMAC})
			}
			require.Equal(t, tt.alias, binding.DeviceAlias(b, "net1"))
		})
	}
}

// TestCheck: a binding plugin name the registry does not hold (a typo of
// virtnet-masquerade) is refused by Registry.Check with the field's path
// and the names known; virtnet's own plugin names and the methods pass
// with the default registry; a custom binding passes once registered.
func TestCheck(t *testing.T) {
	const manifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vm}
spec:
  domain:
    devices:
      interfaces:
      - {name: a, binding: {name: virtnet-masquerad}}
      - {name: b, binding: {name: virtnet-bridge}}
      - {name: c, bridge: {}}
  networks:
  - {name: a, pod: {}}
  - {name: b, multus: {networkName: b}}
  - {name: c, multus: {networkName: c}}
`
	vmi, err := api.Load([]byte(manifest))
	require.NoError(t, err, "api.Validate cannot know which plugins a program registered")
	reg := registry.Default()
	err = reg.Check(vmi)
	fes := api.FieldErrors(err)
	require.Len(t, fes, 1, "%v", err)
	require.Equal(t, "spec.domain.devices.interfaces[0].binding.name", fes[0].Path)
	require.Equal(t, "virtnet-masquerad", fes[0].Value)
	for _, known := range []string{api.PluginMasquerade, api.PluginBridge, api.PluginSlirp, api.BindingMasquerade} {
		require.Contains(t, fes[0].Reason, known)
	}
	require.Equal(t, reg.Names(), slices.Sorted(maps.Keys(reg)))

	reg["virtnet-masquerad"] = bridge.Binding{}
	require.NoError(t, reg.Check(vmi), "registered under that name")
	reg["virtnet-masquerad"] = nil
	require.Error(t, reg.Check(vmi), "a nil binding is no binding")
}
