package slirp

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

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
		want: []string{"-netdev", "user,id=hostua-default,net=10.0.2.0/24,dnssearch=cluster.local",
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
		want: []string{"-netdev", "user,id=hostua-default,net=10.1.0.0/24,dnssearch=cluster.local,hostfwd=tcp::80-:80,hostfwd=udp::53-:53,hostfwd=tcp::22-:22",
			"-device", "rtl8139,netdev=hostua-default,id=ua-default,mac=02:00:00:aa:bb:cc,bootindex=3"},
	}, {
		name:   "vmNetworkCIDR with host bits is its network",
		mutate: func(v *api.VMI) { v.Spec.Networks[0].Pod.VMNetworkCIDR = "10.1.0.77/24" },
		want: []string{"-netdev", "user,id=hostua-default,net=10.1.0.0/24,dnssearch=cluster.local",
			"-device", "e1000,netdev=hostua-default,id=ua-default"},
	}, {
		name:   "e1000e is not kept",
		mutate: func(v *api.VMI) { v.Spec.Domain.Devices.Interfaces[0].Model = "e1000e" },
		want: []string{"-netdev", "user,id=hostua-default,net=10.0.2.0/24,dnssearch=cluster.local",
			"-device", "e1000,netdev=hostua-default,id=ua-default"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, p := vmi(t, tc.mutate)
			got, err := Args(p, SearchDomains(nil))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestArgsErrors(t *testing.T) {
	_, p := vmi(t, nil)
	p.Interface.Ports = []api.Port{{Port: 80, Protocol: "SCTP"}}
	_, err := Args(p, nil)
	var pe *binding.PortError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, binding.PortError{Interface: "default", Protocol: "SCTP", Port: 80}, *pe)

	_, p = vmi(t, nil)
	p.Network.Pod.VMNetworkCIDR = "fd10::/64"
	_, err = Args(p, nil)
	require.ErrorIs(t, err, ErrCIDR)
	require.ErrorContains(t, err, `"fd10::/64"`)
}

// TestSearchDomains: one dnssearch= per search domain of the pod's
// resolv.conf, in order, as KubeVirt v0.53 renders them; a domain that is
// not a DNS name is refused by name (a ',' would add QEMU options).
func TestSearchDomains(t *testing.T) {
	kubelet := "search default.svc.cluster.local svc.cluster.local cluster.local example.ORG\nnameserver 10.96.0.10\noptions ndots:5\n"
	for _, tc := range []struct {
		name, resolv string
		want         []string
	}{
		{"kubelet's", kubelet, []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.org"}},
		{"no search line", "nameserver 10.96.0.10\n", []string{"cluster.local"}},
		{"two search lines, a comment", "search a.example # old\n  search b.example\n", []string{"a.example", "b.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, SearchDomains([]byte(tc.resolv)))
		})
	}

	_, p := vmi(t, nil)
	got, err := Args(p, SearchDomains([]byte(kubelet)))
	require.NoError(t, err)
	require.Equal(t, "user,id=hostua-default,net=10.0.2.0/24,dnssearch=default.svc.cluster.local,"+
		"dnssearch=svc.cluster.local,dnssearch=cluster.local,dnssearch=example.org", got[1])

	_, err = Args(p, SearchDomains([]byte("search ok.example evil.example,hostfwd=tcp::22-:22\n")))
	require.ErrorIs(t, err, ErrSearchDomain)
	require.EqualError(t, err, `resolv.conf search domain "evil.example,hostfwd=tcp::22-:22" is not a DNS name`)
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
		resolv string
	}{
		{name: "plain"},
		{name: "search", resolv: "search default.svc.cluster.local svc.cluster.local cluster.local\n"},
		{name: "ports-mac", mutate: func(v *api.VMI) {
			i := &v.Spec.Domain.Devices.Interfaces[0]
			i.Ports = []api.Port{{Name: "http", Port: 80}, {Port: 5353, Protocol: "UDP"}}
			i.MacAddress = "02:00:00:aa:bb:cc"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, p := vmi(t, tc.mutate)
			dom := testutil.GoldenDomain()
			in := binding.RenderInput{VMI: v, Pair: p}
			if tc.resolv != "" {
				in.Options.ResolvConf = []byte(tc.resolv)
			}
			require.NoError(t, Binding{}.Render(in, dom))
			testutil.CheckDomain(t, dom, testutil.GoldenPath(t, tc.name, ".xml"))
		})
	}
}
