package slirp

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/internal/goldentest"
	"github.com/virtnet/virtnet/cache"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func vmi(t *testing.T, mutate func(*api.VMI)) (*api.VMI, api.Pair) {
	t.Helper()
	v := &api.VMI{Metadata: api.ObjectMeta{Name: "vmi-slirp"}}
	v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Slirp: &struct{}{}}}
	v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
	if mutate != nil {
		mutate(v)
	}
	api.SetDefaults(v)
	require.NoError(t, api.Validate(v))
	ps, err := api.Pairs(v)
	require.NoError(t, err)
	return v, ps[0]
}

func TestArgs(t *testing.T) {
	uintp := func(u uint) *uint { return &u }
	tests := []struct {
		name   string
		mutate func(*api.VMI)
		want   []string
	}{{
		name: "defaults: virtio becomes e1000",
		want: []string{"-netdev", "user,id=hostua-default,net=10.0.2.0/24",
			"-device", "e1000,netdev=hostua-default,id=ua-default"},
	}, {
		name: "ports, mac, rtl8139, boot order, own CIDR",
		mutate: func(v *api.VMI) {
			i := &v.Spec.Domain.Devices.Interfaces[0]
			i.Ports = []api.Port{{Name: "http", Port: 80}, {Port: 53, Protocol: "UDP"}, {Port: 22, Protocol: "TCP"}}
			i.MacAddress = "02:00:00:AA:BB:CC"
			i.Model = "rtl8139"
			i.BootOrder = uintp(3)
			v.Spec.Networks[0].Pod.VMNetworkCIDR = "10.1.0.0/24"
		},
		want: []string{"-netdev", "user,id=hostua-default,net=10.1.0.0/24,hostfwd=tcp::80-:80,hostfwd=udp::53-:53,hostfwd=tcp::22-:22",
			"-device", "rtl8139,netdev=hostua-default,id=ua-default,mac=02:00:00:aa:bb:cc,bootindex=3"},
	}, {
		name:   "vmNetworkCIDR with host bits is its network",
		mutate: func(v *api.VMI) { v.Spec.Networks[0].Pod.VMNetworkCIDR = "10.1.0.77/24" },
		want: []string{"-netdev", "user,id=hostua-default,net=10.1.0.0/24",
			"-device", "e1000,netdev=hostua-default,id=ua-default"},
	}, {
		name:   "e1000e is not kept",
		mutate: func(v *api.VMI) { v.Spec.Domain.Devices.Interfaces[0].Model = "e1000e" },
		want: []string{"-netdev", "user,id=hostua-default,net=10.0.2.0/24",
			"-device", "e1000,netdev=hostua-default,id=ua-default"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, p := vmi(t, tc.mutate)
			got, err := Args(p)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestArgsErrors(t *testing.T) {
	_, p := vmi(t, nil)
	p.Interface.Ports = []api.Port{{Port: 80, Protocol: "SCTP"}}
	_, err := Args(p)
	var pe *PortError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, PortError{Interface: "default", Protocol: "SCTP", Port: 80}, *pe)

	_, p = vmi(t, nil)
	p.Network.Pod.VMNetworkCIDR = "fd10::/64"
	_, err = Args(p)
	var ce *CIDRError
	require.ErrorAs(t, err, &ce)
	require.ErrorContains(t, err, `"fd10::/64"`)
}

func TestPhase1DoesNothing(t *testing.T) {
	v, p := vmi(t, nil)
	in := binding.Input{VMI: v, Pair: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	b := Binding{}
	require.False(t, b.NeedsRecord())
	link, err := b.Discover(ctx, nil, in)
	require.NoError(t, err)
	require.Nil(t, link)
	rec, err := b.Plan(in, nil)
	require.NoError(t, err)
	require.Equal(t, &cache.Interface{Version: cache.Version, Interface: "default", PodInterface: "eth0", Binding: "slirp"}, rec)
	require.NoError(t, b.Prepare(ctx, nil, in, nil, rec))
	require.NoError(t, b.Cleanup(ctx, nil, in, nil, rec))
}

func TestRender(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*api.VMI)
	}{
		{name: "plain"},
		{name: "ports-mac", mutate: func(v *api.VMI) {
			i := &v.Spec.Domain.Devices.Interfaces[0]
			i.Ports = []api.Port{{Name: "http", Port: 80}, {Port: 5353, Protocol: "UDP"}}
			i.MacAddress = "02:00:00:aa:bb:cc"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, p := vmi(t, tc.mutate)
			dom := goldentest.Domain()
			require.NoError(t, Binding{}.Render(binding.RenderInput{VMI: v, Pair: p}, dom))
			goldentest.Check(t, dom, goldentest.Path(t, tc.name), *update)
		})
	}
}
