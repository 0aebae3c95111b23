package binding_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/bridge"
	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
)

// clampInput is the input of the VMI's interface "default" (masquerade or
// bridge) with the guest-mtu annotation set to ann ("" for none); a second
// interface "blue" exists for the annotation to name.
func clampInput(t *testing.T, method, ann string) binding.Input {
	t.Helper()
	v := &api.VMI{Metadata: api.ObjectMeta{Name: "vmi", Namespace: "default", UID: "u1"}}
	if ann != "" {
		v.Metadata.Annotations = map[string]string{api.GuestMTUAnnotation: ann}
	}
	def := api.Interface{Name: "default"}
	if method == api.BindingBridge {
		def.Bridge = &struct{}{}
	} else {
		def.Masquerade = &struct{}{}
	}
	v.Spec.Domain.Devices.Interfaces = []api.Interface{def, {Name: "blue", Bridge: &struct{}{}}}
	v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}, {Name: "blue", Multus: &api.MultusNetwork{NetworkName: "blue-net"}}}
	api.SetDefaults(v)
	require.NoError(t, api.Validate(v))
	ps, err := api.Pairs(v)
	require.NoError(t, err)
	return binding.Input{VMI: v, Pair: ps[0], Names: binding.Names{Pod: "eth0", NIC: "eth0-nic", Bridge: "k6t-eth0", Tap: "tap0"}}
}

// TestGuestMTUClamp: the clamp of virtnet.io/guest-mtu lowers the
// masquerade record's MTU (which the bridge, the tap, <mtu> and DHCP
// option 26 take); one above the pod link's, a malformed one, one naming
// no interface and one below IPv6's minimum are refused by field path;
// the bridge binding refuses any clamp of its interface (layer 2: no ICMP
// tells a sender) and ignores one for another interface.
func TestGuestMTUClamp(t *testing.T) {
	link := &cache.Link{Name: "eth0", Type: "veth", MAC: cache.MustParseMAC("02:00:00:00:00:07"), MTU: 1450,
		Addresses: []netip.Prefix{netip.MustParsePrefix("10.244.1.7/24")}, Routes: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}}}
	const path = "metadata.annotations[virtnet.io/guest-mtu]"
	for _, tc := range []struct {
		name, method, ann string
		wantMTU           int
		wantPath, wantMsg string
	}{
		{"masquerade: no clamp, the pod link's", api.BindingMasquerade, "", 1450, "", ""},
		{"masquerade: clamp 1400", api.BindingMasquerade, "default=1400", 1400, "", ""},
		{"masquerade: clamp equal to the pod's", api.BindingMasquerade, "blue=1300, default=1450", 1450, "", ""},
		{"masquerade: another interface's clamp", api.BindingMasquerade, "blue=1300", 1450, "", ""},
		{"masquerade: above the pod link", api.BindingMasquerade, "default=1500", 0, path + ".default", "above the MTU 1450 of the pod link eth0"},
		{"below IPv6's minimum", api.BindingMasquerade, "default=1200", 0, path + ".default", "between 1280"},
		{"not a number", api.BindingMasquerade, "default=big", 0, path + ".default", "not an MTU"},
		{"unknown interface", api.BindingMasquerade, "red=1400", 0, path + ".red", "no interface"},
		{"twice", api.BindingMasquerade, "default=1400,default=1300", 0, path + ".default", "twice"},
		{"malformed", api.BindingMasquerade, "1400", 0, path, "want <interface>=<mtu>"},
		{"bridge: no clamp", api.BindingBridge, "", 1450, "", ""},
		{"bridge: another interface's clamp", api.BindingBridge, "blue=1400", 1450, "", ""},
		{"bridge: refused", api.BindingBridge, "default=1400", 0, path + ".default", "forwards at layer 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clampInput(t, tc.method, tc.ann)
			var (
				rec *cache.Interface
				err error
			)
			if tc.method == api.BindingBridge {
				rec, err = bridge.Binding{}.Plan(in, link)
			} else {
				rec, err = masquerade.Binding{}.Plan(in, link)
			}
			if tc.wantPath != "" {
				var fe *api.FieldError
				require.True(t, errors.As(err, &fe), "want a *api.FieldError, got %v", err)
				require.Equal(t, tc.wantPath, fe.Path)
				require.Contains(t, err.Error(), tc.wantMsg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.wantMTU, rec.MTU)
		})
	}
}
