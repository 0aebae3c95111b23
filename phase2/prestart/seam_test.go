package prestart_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// noDHCP is the bridge binding without its DHCPServer method: only the
// methods of binding.Binding are promoted.
type noDHCP struct{ binding.Binding }

// alwaysDHCP is an outside binding that asks for a DHCP server.
type alwaysDHCP struct{ binding.Binding }

func (alwaysDHCP) DHCPService(rec *cache.Interface) binding.DHCPService {
	return binding.DHCPService{IPv4: rec != nil}
}

// TestBindingAsksForDHCP: the network step starts a DHCP server for an
// interface because its binding implements binding.DHCPServer, not
// because of its method's name. The same bridge interface with an IPAM
// record gets none from a binding without the method, and one (which
// cannot bind: the record's bridge does not exist) from one with it; the
// registry comes through Hook.Registry.
func TestBindingAsksForDHCP(t *testing.T) {
	tests := []struct {
		name    string
		binding binding.Binding
		wantErr string
	}{
		{"no DHCPServer: no server", noDHCP{bridge.Binding{}}, ""},
		{"DHCPServer: a server", alwaysDHCP{bridge.Binding{}}, "k6t-nosuchbr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, vmiYAML)
			testutil.WriteRecord(t, e.hook.Store, uid, &cache.Interface{
				Interface: "default", PodInterface: "eth0", Binding: "bridge",
				Bridge: "k6t-nosuchbr", Tap: "tap0", MAC: cache.MustParseMAC("02:00:00:00:00:01"), MTU: 1440,
				IPv4: netip.MustParsePrefix("10.244.1.7/24"), Gateway: netip.MustParseAddr("10.244.1.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
			})
			e.hook.Registry = binding.Registry{api.BindingBridge: tt.binding}
			r, err := e.hook.Run(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NoError(t, r.Stop())
			require.Empty(t, r.Servers())
			require.Len(t, r.Domain().Devices.Interfaces, 1)
		})
	}
}
