package sriov

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

// vmiWith returns a validated VMI with the pod network on masquerade and
// one SR-IOV interface per name, on Multus networks in the given order
// (so the first is net1), and its pairs keyed by interface name.
func vmiWith(t *testing.T, names ...string) (*api.VMI, map[string]api.Pair) {
	t.Helper()
	v := &api.VMI{Metadata: api.ObjectMeta{Name: "vmi-sriov"}}
	v.Spec.Domain.Devices.Interfaces = []api.Interface{{Name: "default", Masquerade: &struct{}{}}}
	v.Spec.Networks = []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}
	for _, n := range names {
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, api.Interface{Name: n, SRIOV: &struct{}{}})
		v.Spec.Networks = append(v.Spec.Networks, api.Network{Name: n, Multus: &api.MultusNetwork{NetworkName: "sriov/" + n}})
	}
	api.SetDefaults(v)
	require.NoError(t, api.Validate(v))
	return v, pairsOf(t, v)
}

func pairsOf(t *testing.T, v *api.VMI) map[string]api.Pair {
	t.Helper()
	ps, err := api.Pairs(v)
	require.NoError(t, err)
	m := map[string]api.Pair{}
	for _, p := range ps {
		m[p.Interface.Name] = p
	}
	return m
}

func TestEnvVarNames(t *testing.T) {
	for _, tc := range []struct{ resource, want string }{
		{"intel.com/sriov_netdevice", "PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE"},
		{"openshift.io/mlx.vf", "PCIDEVICE_OPENSHIFT_IO_MLX_VF"},
	} {
		require.Equal(t, tc.want, PCIDeviceEnvVar(tc.resource))
	}
	require.Equal(t, "KUBEVIRT_RESOURCE_NAME_sriov-net", ResourceEnvVar("sriov-net"))
}

func TestAddresses(t *testing.T) {
	const resA, resB = "intel.com/a", "intel.com/b"
	varA, varB := PCIDeviceEnvVar(resA), PCIDeviceEnvVar(resB)
	tests := []struct {
		name      string
		ifaces    []string
		env       map[string]string
		netStatus string
		netInfo   string
		want      map[string]string
		wantErr   map[string]error
	}{{
		name:   "one resource, spec order, trailing comma",
		ifaces: []string{"s1", "s2"},
		env: map[string]string{ResourceEnvVar("s1"): resA, ResourceEnvVar("s2"): resA,
			varA: "0000:81:10.0,0000:81:10.1,"},
		want: map[string]string{"s1": "0000:81:10.0", "s2": "0000:81:10.1"},
	}, {
		name:   "two resources sharing an address",
		ifaces: []string{"s1", "s2"},
		env: map[string]string{ResourceEnvVar("s1"): resA, ResourceEnvVar("s2"): resB,
			varA: "0000:81:10.0", varB: "0000:81:10.0,0000:81:10.4"},
		want: map[string]string{"s1": "0000:81:10.0", "s2": "0000:81:10.4"},
	}, {
		name:   "exhausted",
		ifaces: []string{"s1", "s2"},
		env: map[string]string{ResourceEnvVar("s1"): resA, ResourceEnvVar("s2"): resA,
			varA: "0000:81:10.0"},
		want:    map[string]string{"s1": "0000:81:10.0"},
		wantErr: map[string]error{"s2": ErrExhausted},
	}, {
		name:    "no resource variable",
		ifaces:  []string{"s1"},
		env:     map[string]string{},
		wantErr: map[string]error{"s1": ErrNotSet},
	}, {
		name:    "no PCIDEVICE variable",
		ifaces:  []string{"s1"},
		env:     map[string]string{ResourceEnvVar("s1"): resA},
		wantErr: map[string]error{"s1": ErrNotSet},
	}, {
		name:    "bad address",
		ifaces:  []string{"s1"},
		env:     map[string]string{ResourceEnvVar("s1"): resA, varA: "0000:81:10"},
		wantErr: map[string]error{"s1": ErrBadAddress},
	}, {
		name:   "network-status first, env for the rest without reuse",
		ifaces: []string{"s1", "s2"},
		env: map[string]string{ResourceEnvVar("s1"): resA, ResourceEnvVar("s2"): resA,
			varA: "0000:81:10.0,0000:81:10.1"},
		// s2 is net2: network-status gives it the first env address, so
		// s1 (from the environment) must take the second.
		netStatus: `[{"name":"kubevirt/pod","interface":"eth0","ips":["10.244.0.5"],"default":true},
			{"name":"sriov/s2","interface":"net2","device-info":{"type":"pci","version":"1.0.0","pci":{"pci-address":"0000:81:10.0"}}}]`,
		want: map[string]string{"s1": "0000:81:10.1", "s2": "0000:81:10.0"},
	}, {
		name:      "network-status only",
		ifaces:    []string{"s1"},
		netStatus: `[{"name":"sriov/s1","interface":"net1","device-info":{"type":"pci","pci":{"pci-address":"0000:3B:02.7"}}}]`,
		want:      map[string]string{"s1": "0000:3b:02.7"},
	}, {
		name:      "network-status bad JSON",
		ifaces:    []string{"s1"},
		env:       map[string]string{ResourceEnvVar("s1"): resA, varA: "0000:81:10.0"},
		netStatus: `{not json`,
		wantErr:   map[string]error{"s1": ErrBadNetworkStatus},
	}, {
		name:      "network-status bad address",
		ifaces:    []string{"s1"},
		netStatus: `[{"interface":"net1","device-info":{"pci":{"pci-address":"81:10.0"}}}]`,
		wantErr:   map[string]error{"s1": ErrBadAddress},
	}, {
		// KubeVirt 1.x's downward-API file (issue 22 item 7), keyed by
		// network name, as v1.9's virt-controller writes it.
		name:    "network-info first, then network-status, then env",
		ifaces:  []string{"s1", "s2", "s3"},
		netInfo: `{"interfaces":[{"network":"s2","deviceInfo":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:65:00.3"}}},{"network":"default","mac":"aa:bb:cc:dd:ee:ff"}]}`,
		netStatus: `[{"name":"sriov/s2","interface":"net2","device-info":{"pci":{"pci-address":"0000:81:10.5"}}},` +
			`{"name":"sriov/s3","interface":"net3","device-info":{"pci":{"pci-address":"0000:81:10.6"}}}]`,
		env:  map[string]string{ResourceEnvVar("s1"): resA, varA: "0000:65:00.3,0000:81:10.1"},
		want: map[string]string{"s1": "0000:81:10.1", "s2": "0000:65:00.3", "s3": "0000:81:10.6"},
	}, {
		// One VF named for two networks: two hostdevs of one VF would
		// fail libvirt's define; the second interface says why.
		name:    "network-info gives one address twice",
		ifaces:  []string{"s1", "s2"},
		netInfo: `{"interfaces":[{"network":"s1","deviceInfo":{"type":"pci","pci":{"pci-address":"0000:65:00.3"}}},{"network":"s2","deviceInfo":{"type":"pci","pci":{"pci-address":"0000:65:00.3"}}}]}`,
		want:    map[string]string{"s1": "0000:65:00.3"},
		wantErr: map[string]error{"s2": ErrAddressTwice},
	}, {
		name:      "network-status gives one address twice",
		ifaces:    []string{"s1", "s2"},
		netStatus: `[{"name":"sriov/s1","interface":"net1","device-info":{"pci":{"pci-address":"0000:81:10.5"}}},{"name":"sriov/s2","interface":"net2","device-info":{"pci":{"pci-address":"0000:81:10.5"}}}]`,
		want:      map[string]string{"s1": "0000:81:10.5"},
		wantErr:   map[string]error{"s2": ErrAddressTwice},
	}, {
		name:    "network-info only",
		ifaces:  []string{"s1"},
		netInfo: `{"interfaces":[{"network":"s1","deviceInfo":{"type":"pci","pci":{"pci-address":"0000:3B:02.7"}}}]}`,
		want:    map[string]string{"s1": "0000:3b:02.7"},
	}, {
		name:    "network-info without the network: the environment",
		ifaces:  []string{"s1"},
		netInfo: `{"interfaces":[]}`,
		env:     map[string]string{ResourceEnvVar("s1"): resA, varA: "0000:81:10.0"},
		want:    map[string]string{"s1": "0000:81:10.0"},
	}, {
		name:    "network-info bad JSON",
		ifaces:  []string{"s1"},
		netInfo: `{"interfaces":`,
		env:     map[string]string{ResourceEnvVar("s1"): resA, varA: "0000:81:10.0"},
		wantErr: map[string]error{"s1": ErrBadNetworkStatus},
	}, {
		name:    "network-info bad address",
		ifaces:  []string{"s1"},
		netInfo: `{"interfaces":[{"network":"s1","deviceInfo":{"pci":{"pci-address":"zz"}}}]}`,
		wantErr: map[string]error{"s1": ErrBadAddress},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := vmiWith(t, tc.ifaces...)
			if tc.netStatus != "" {
				v.Metadata.Annotations = map[string]string{NetworkStatusAnnotation: tc.netStatus}
			}
			got, errs := Addresses(v, tc.env, []byte(tc.netInfo))
			if tc.want == nil {
				tc.want = map[string]string{}
			}
			require.Equal(t, tc.want, got)
			require.Len(t, errs, len(tc.wantErr))
			for name, sentinel := range tc.wantErr {
				require.ErrorIs(t, errs[name], sentinel)
				require.Regexp(t, `^[^=\s]+=`, errs[name].Error(), "names the variable")
				require.NotContains(t, errs[name].Error(), `interface "`, "the caller names the interface")
			}
		})
	}
}

func TestSimulatedEnv(t *testing.T) {
	names := []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8"}
	v, _ := vmiWith(t, names...)
	env := SimulatedEnv(v)
	got, errs := Addresses(v, env, nil)
	require.Empty(t, errs)
	require.Equal(t, "0000:81:10.0", got["s0"])
	require.Equal(t, "0000:81:10.7", got["s7"])
	require.Equal(t, "0000:81:11.0", got["s8"])

	noSRIOV, _ := vmiWith(t)
	require.Nil(t, SimulatedEnv(noSRIOV))
}

func TestPhase1DoesNothing(t *testing.T) {
	v, ps := vmiWith(t, "s1")
	in := binding.Input{VMI: v, Pair: ps["s1"], Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	b := Binding{}
	require.False(t, b.NeedsRecord())
	link, err := b.Discover(ctx, nil, in)
	require.NoError(t, err)
	require.Nil(t, link)
	rec, err := b.Plan(in, nil)
	require.NoError(t, err)
	require.Equal(t, &cache.Interface{Version: cache.Version, Interface: "s1", PodInterface: "net1", Binding: "sriov"}, rec)
	require.NoError(t, b.Prepare(ctx, nil, in, nil, rec))
	require.NoError(t, b.Cleanup(ctx, nil, in, nil, rec))
}

func TestRender(t *testing.T) {
	uintp := func(u uint) *uint { return &u }
	tests := []struct {
		name   string
		ifaces []string
		mutate func(*api.VMI)
	}{
		{name: "one", ifaces: []string{"sriov-net"}},
		{name: "two-boot-pci", ifaces: []string{"sriov-a", "sriov-b"}, mutate: func(v *api.VMI) {
			v.Spec.Domain.Devices.Interfaces[1].BootOrder = uintp(1)
			v.Spec.Domain.Devices.Interfaces[2].PciAddress = "0000:00:0b.0"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, _ := vmiWith(t, tc.ifaces...)
			if tc.mutate != nil {
				tc.mutate(v)
			}
			ps := pairsOf(t, v)
			env := SimulatedEnv(v)
			dom := testutil.GoldenDomain()
			// Render in reverse order: the allocation must not depend on it.
			for i := len(tc.ifaces) - 1; i >= 0; i-- {
				p := ps[tc.ifaces[i]]
				require.NoError(t, Binding{}.Render(binding.RenderInput{VMI: v, Pair: p, Options: binding.RenderOptions{Env: env}}, dom))
			}
			testutil.CheckDomain(t, dom, testutil.GoldenPath(t, tc.name, ".xml"))
		})
	}
}

func TestRenderErrors(t *testing.T) {
	v, ps := vmiWith(t, "s1")
	err := Binding{}.Render(binding.RenderInput{VMI: v, Pair: ps["s1"]}, testutil.GoldenDomain())
	require.ErrorIs(t, err, ErrNotSet)
	require.EqualError(t, err, `KUBEVIRT_RESOURCE_NAME_s1="": not set`)

	v.Spec.Domain.Devices.Interfaces[1].PciAddress = "0000:00:20.0"
	err = Binding{}.Render(binding.RenderInput{VMI: v, Pair: ps["s1"], Options: binding.RenderOptions{Env: SimulatedEnv(v)}}, testutil.GoldenDomain())
	require.ErrorContains(t, err, `pciAddress: `)
}
