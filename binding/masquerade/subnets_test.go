package masquerade_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/masquerade"
)

func TestSubnets(t *testing.T) {
	for _, tc := range []struct {
		name         string
		net          *api.Network
		v4, v6       bool
		gw4, vm4     string
		gw6, vm6     string
		wantErrField string
	}{
		{name: "defaults", net: &api.Network{Pod: &api.PodNetwork{}}, v4: true, v6: true,
			gw4: "10.0.2.1/24", vm4: "10.0.2.2/24", gw6: "fd10:0:2::1/120", vm6: "fd10:0:2::2/120"},
		{name: "vmNetworkCIDR honoured", net: &api.Network{Pod: &api.PodNetwork{VMNetworkCIDR: "10.11.12.16/28"}}, v4: true,
			gw4: "10.11.12.17/28", vm4: "10.11.12.18/28"},
		{name: "vmIPv6NetworkCIDR honoured", net: &api.Network{Pod: &api.PodNetwork{VMIPv6NetworkCIDR: "fd20::/64"}}, v6: true,
			gw6: "fd20::1/64", vm6: "fd20::2/64"},
		{name: "smallest IPv4 network", net: &api.Network{Pod: &api.PodNetwork{VMNetworkCIDR: "192.168.7.0/30"}}, v4: true,
			gw4: "192.168.7.1/30", vm4: "192.168.7.2/30"},
		{name: "host bits: the network is used, as KubeVirt does", net: &api.Network{Pod: &api.PodNetwork{VMNetworkCIDR: "10.11.12.21/28", VMIPv6NetworkCIDR: "fd20::7/64"}}, v4: true, v6: true,
			gw4: "10.11.12.17/28", vm4: "10.11.12.18/28", gw6: "fd20::1/64", vm6: "fd20::2/64"},
		{name: "IPv4 only pod", net: &api.Network{Pod: &api.PodNetwork{}}, v4: true, gw4: "10.0.2.1/24", vm4: "10.0.2.2/24"},
		{name: "too small", net: &api.Network{Pod: &api.PodNetwork{VMNetworkCIDR: "10.0.0.0/31"}}, v4: true, wantErrField: "vmNetworkCIDR"},
		{name: "bad IPv6", net: &api.Network{Pod: &api.PodNetwork{VMIPv6NetworkCIDR: "fd20::/127"}}, v6: true, wantErrField: "vmIPv6NetworkCIDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v4, v6, err := masquerade.Subnets(tc.net, tc.v4, tc.v6)
			if tc.wantErrField != "" {
				require.ErrorContains(t, err, tc.wantErrField)
				return
			}
			require.NoError(t, err)
			str := func(s masquerade.Subnet) (string, string) {
				if !s.VM.IsValid() {
					return "", ""
				}
				return s.Gateway.String(), s.VM.String()
			}
			gw4, vm4 := str(v4)
			gw6, vm6 := str(v6)
			require.Equal(t, []string{tc.gw4, tc.vm4, tc.gw6, tc.vm6}, []string{gw4, vm4, gw6, vm6})
		})
	}
}
