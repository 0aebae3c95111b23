package deviceplugin

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSuitableLowerDevice(t *testing.T) {
	tests := []struct {
		link Link
		want bool
	}{
		{Link{Name: "eno1", EncapType: "ether", Flags: net.FlagUp}, true},
		{Link{Name: "p4p1", EncapType: "ether"}, true}, // down NICs still count
		{Link{Name: "bond0", Kind: "bond", EncapType: "ether"}, true},
		{Link{Name: "lo", EncapType: "loopback", Flags: net.FlagLoopback | net.FlagUp}, false},
		{Link{Name: "veth1", Kind: "veth", EncapType: "ether"}, false},
		{Link{Name: "br0", Kind: "bridge", EncapType: "ether"}, false},
		{Link{Name: "tap0", Kind: "tuntap", EncapType: "ether"}, false},
		{Link{Name: "dummy0", Kind: "dummy", EncapType: "ether"}, false},
		{Link{Name: "mvt1", Kind: "macvtap", EncapType: "ether"}, false},
		{Link{Name: "mv1", Kind: "macvlan", EncapType: "ether"}, false},
		{Link{Name: "eth0.100", Kind: "vlan", EncapType: "ether"}, false},
		{Link{Name: "vxlan0", Kind: "vxlan", EncapType: "ether"}, false},
		{Link{Name: "sit0", Kind: "sit", EncapType: "sit"}, false},
		{Link{Name: "ib0", EncapType: "infiniband"}, false},
		{Link{Name: "eno2", EncapType: "ether", MasterIndex: 7}, false}, // bond or bridge port
	}
	for _, tc := range tests {
		t.Run(tc.link.Name, func(t *testing.T) {
			require.Equal(t, tc.want, SuitableLowerDevice(tc.link))
		})
	}
}

func TestDiscover(t *testing.T) {
	links := []Link{
		{Name: "lo", EncapType: "loopback", Flags: net.FlagLoopback},
		{Name: "p4p2", EncapType: "ether"},
		{Name: "eno1", EncapType: "ether"},
		{Name: "cni0", Kind: "bridge", EncapType: "ether"},
		{Name: "bond0", Kind: "bond", EncapType: "ether"},
		{Name: "veth9a8b", Kind: "veth", EncapType: "ether", MasterIndex: 4},
	}
	lister := LinkListerFunc(func(context.Context) ([]Link, error) { return links, nil })
	got, err := Discover(t.Context(), lister)
	require.NoError(t, err)
	require.Equal(t, []Resource{DefaultResource("bond0"), DefaultResource("eno1"), DefaultResource("p4p2")}, got)
	require.Equal(t, "macvtap.network.kubevirt.io/eno1", got[1].ResourceName())
	require.Equal(t, 100, got[1].Capacity)

	// A configuration wins over discovery; "[]" falls back to it.
	conf := []Resource{{Name: "dataplane", LowerDevice: "eno1", Mode: "vepa", Capacity: 5}}
	res, err := Resources(t.Context(), conf, lister)
	require.NoError(t, err)
	require.Equal(t, conf, res)
	res, err = Resources(t.Context(), nil, lister)
	require.NoError(t, err)
	require.Len(t, res, 3)

	boom := errors.New("netlink down")
	_, err = Discover(t.Context(), LinkListerFunc(func(context.Context) ([]Link, error) { return nil, boom }))
	require.ErrorIs(t, err, boom)
}
