package macvtap

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// fakeDriver is the smallest netdriver.Driver the binding needs: links by
// name and SetMAC. Any other call panics through the nil embedded
// interface, which proves the binding makes none.
type fakeDriver struct {
	netdriver.Driver
	links map[string]*netdriver.Link
	calls []string
	// failSetMAC makes SetMAC fail.
	failSetMAC error
}

func newFake(links ...*netdriver.Link) *fakeDriver {
	f := &fakeDriver{links: map[string]*netdriver.Link{}}
	for _, l := range links {
		f.links[l.Name] = l
	}
	return f
}

func (f *fakeDriver) LinkByName(name string) (*netdriver.Link, error) {
	l, ok := f.links[name]
	if !ok {
		return nil, &netdriver.LinkNotFoundError{Name: name}
	}
	c := *l
	return &c, nil
}

func (f *fakeDriver) SetMAC(name string, mac net.HardwareAddr) error {
	f.calls = append(f.calls, "SetMAC "+name+" "+mac.String())
	if f.failSetMAC != nil {
		return f.failSetMAC
	}
	l, ok := f.links[name]
	if !ok {
		return &netdriver.LinkNotFoundError{Name: name}
	}
	l.MAC = mac
	return nil
}

func mustMAC(s string) net.HardwareAddr {
	hw, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return hw
}

func macvtapLink(name, mac string) *netdriver.Link {
	return &netdriver.Link{Name: name, Index: 7, Type: netdriver.TypeMacvtap, MAC: mustMAC(mac), MTU: 1500, MacvtapMode: "bridge", Up: true}
}

// vmi is a VMI with the pod network on masquerade and one macvtap
// interface on the Multus network "macvtapnetwork" (pod link net1).
func vmi(t *testing.T, mutate func(*api.Interface)) (*api.VMI, api.Pair) {
	t.Helper()
	v := &api.VMI{
		Metadata: api.ObjectMeta{Name: "vmi-macvtap"},
		Spec: api.VMISpec{
			Domain: api.DomainSpec{Devices: api.Devices{Interfaces: []api.Interface{
				{Name: "default", Masquerade: &struct{}{}},
				{Name: "macvtap", Macvtap: &struct{}{}},
			}}},
			Networks: []api.Network{
				{Name: "default", Pod: &api.PodNetwork{}},
				{Name: "macvtap", Multus: &api.MultusNetwork{NetworkName: "macvtapnetwork"}},
			},
		},
	}
	if mutate != nil {
		mutate(&v.Spec.Domain.Devices.Interfaces[1])
	}
	api.SetDefaults(v)
	require.NoError(t, api.Validate(v))
	pairs, err := api.Pairs(v)
	require.NoError(t, err)
	return v, pairs[1]
}

func input(v *api.VMI, p api.Pair) binding.Input {
	return binding.Input{VMI: v, Pair: p, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func TestDiscoverPlan(t *testing.T) {
	const linkMAC = "02:aa:bb:cc:dd:01"
	tests := []struct {
		name    string
		links   []*netdriver.Link
		mutate  func(*api.Interface)
		want    *cache.Interface
		wantErr func(*testing.T, error)
	}{{
		name:  "link MAC",
		links: []*netdriver.Link{macvtapLink("net1", linkMAC)},
		want: &cache.Interface{Version: cache.Version, Interface: "macvtap", PodInterface: "net1", Binding: "macvtap",
			Target: "net1", Ifindex: 7, MAC: cache.MustParseMAC(linkMAC), MTU: 1500},
	}, {
		name:   "spec MAC wins",
		links:  []*netdriver.Link{macvtapLink("net1", linkMAC)},
		mutate: func(i *api.Interface) { i.MacAddress = "DE:AD:00:00:BE:EF" },
		want: &cache.Interface{Version: cache.Version, Interface: "macvtap", PodInterface: "net1", Binding: "macvtap",
			Target: "net1", Ifindex: 7, MAC: cache.MustParseMAC("de:ad:00:00:be:ef"), MTU: 1500},
	}, {
		name: "missing link",
		wantErr: func(t *testing.T, err error) {
			require.True(t, netdriver.IsLinkNotFound(err), "%v", err)
			require.ErrorContains(t, err, `"net1"`)
		},
	}, {
		name:  "not a macvtap",
		links: []*netdriver.Link{{Name: "net1", Type: netdriver.TypeVeth, MAC: mustMAC(linkMAC), MTU: 1500}},
		wantErr: func(t *testing.T, err error) {
			require.ErrorIs(t, err, ErrWrongType)
			require.EqualError(t, err, `pod link "net1" is of type "veth", not macvtap`)
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, p := vmi(t, tc.mutate)
			d := newFake(tc.links...)
			link, err := Binding{}.Discover(context.Background(), d, input(v, p))
			if tc.wantErr != nil {
				tc.wantErr(t, err)
				return
			}
			require.NoError(t, err)
			rec, err := Binding{}.Plan(input(v, p), link)
			require.NoError(t, err)
			require.Equal(t, tc.want, rec)
			require.Empty(t, d.calls, "discover and plan change nothing")
		})
	}
}

func TestPrepareCleanup(t *testing.T) {
	const linkMAC = "02:aa:bb:cc:dd:01"
	const specMAC = "de:ad:00:00:be:ef"
	tests := []struct {
		name      string
		specMAC   string
		failSet   error
		wantCalls []string
		wantErr   bool
	}{
		{name: "same MAC: nothing to do"},
		{name: "spec MAC set on link", specMAC: specMAC, wantCalls: []string{"SetMAC net1 " + specMAC}},
		{name: "set fails", specMAC: specMAC, failSet: errors.New("boom"), wantCalls: []string{"SetMAC net1 " + specMAC}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, p := vmi(t, func(i *api.Interface) { i.MacAddress = tc.specMAC })
			d := newFake(macvtapLink("net1", linkMAC))
			in := input(v, p)
			ctx := context.Background()
			link, err := Binding{}.Discover(ctx, d, in)
			require.NoError(t, err)
			rec, err := Binding{}.Plan(in, link)
			require.NoError(t, err)

			d.failSetMAC = tc.failSet
			err = Binding{}.Prepare(ctx, d, in, link, rec)
			require.Equal(t, tc.wantCalls, d.calls)
			if tc.wantErr {
				require.ErrorContains(t, err, `set MAC of "net1" to `)
				d.failSetMAC = nil
			} else {
				require.NoError(t, err)
			}
			// A second Prepare (a re-run after success or failure) leaves
			// the link with the VM's MAC and then changes nothing.
			require.NoError(t, Binding{}.Prepare(ctx, d, in, link, rec))
			require.Equal(t, rec.MAC.String(), d.links["net1"].MAC.String())
			d.calls = nil
			require.NoError(t, Binding{}.Prepare(ctx, d, in, link, rec))
			require.Empty(t, d.calls)

			// Cleanup restores the discovered MAC; twice is fine.
			require.NoError(t, Binding{}.Cleanup(ctx, d, in, link, rec))
			require.NoError(t, Binding{}.Cleanup(ctx, d, in, link, rec))
			require.Equal(t, linkMAC, d.links["net1"].MAC.String())
		})
	}
}

func TestCleanupWithoutSetup(t *testing.T) {
	v, p := vmi(t, nil)
	in := input(v, p)
	// Never discovered.
	require.NoError(t, Binding{}.Cleanup(context.Background(), newFake(), in, nil, nil))
	// Discovered, but the link is gone.
	link := &cache.Link{Name: "net1", Type: "macvtap", MAC: cache.MustParseMAC("02:aa:bb:cc:dd:01"), MTU: 1500}
	require.NoError(t, Binding{}.Cleanup(context.Background(), newFake(), in, link, nil))
}

func TestPrepareWithoutRecord(t *testing.T) {
	v, p := vmi(t, nil)
	require.ErrorIs(t, Binding{}.Prepare(context.Background(), newFake(), input(v, p), nil, nil), binding.ErrIncompleteRecord)
}

func TestRender(t *testing.T) {
	uintp := func(u uint) *uint { return &u }
	rec := &cache.Interface{Version: cache.Version, Interface: "macvtap", PodInterface: "net1", Binding: "macvtap",
		Target: "net1", Ifindex: 7, MAC: cache.MustParseMAC("02:aa:bb:cc:dd:01"), MTU: 1500}
	tests := []struct {
		name   string
		mutate func(*api.Interface)
		vmi    func(*api.VMI)
	}{
		{name: "plain"},
		{name: "boot-pci-e1000", mutate: func(i *api.Interface) {
			i.BootOrder = uintp(2)
			i.PciAddress = "0000:00:0a.0"
			i.Model = "e1000"
		}},
		{name: "multiqueue", vmi: func(v *api.VMI) {
			on := true
			v.Spec.Domain.Devices.NetworkInterfaceMultiQueue = &on
			v.Spec.Domain.CPU = &api.CPU{Cores: 2, Sockets: 2}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, p := vmi(t, tc.mutate)
			if tc.vmi != nil {
				tc.vmi(v)
			}
			dom := testutil.GoldenDomain()
			require.NoError(t, Binding{}.Render(binding.RenderInput{VMI: v, Pair: p, Record: rec}, dom))
			testutil.CheckDomain(t, dom, testutil.GoldenPath(t, tc.name, ".xml"))
		})
	}
}

func TestRenderErrors(t *testing.T) {
	v, p := vmi(t, nil)
	require.ErrorIs(t, Binding{}.Render(binding.RenderInput{VMI: v, Pair: p}, testutil.GoldenDomain()), binding.ErrIncompleteRecord)
}
