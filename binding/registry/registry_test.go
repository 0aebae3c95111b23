package registry_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
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
	}
	reg := registry.Default()
	require.Len(t, reg, len(tests), "every built-in binding is in the table")
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			b, err := reg.Lookup(tt.method)
			require.NoError(t, err)
			s, ok := b.(binding.DHCPServer)
			require.Equal(t, tt.dhcp, ok && s.ServesDHCP(&cache.Interface{Interface: "net1"}), "serves DHCP with a record")
			if ok {
				require.False(t, s.ServesDHCP(nil), "no DHCP without a record")
			}
			require.Equal(t, tt.alias, binding.DeviceAlias(b, "net1"))
		})
	}
}
