package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

func TestPairs(t *testing.T) {
	type pair struct{ name, podIface, binding string }
	tests := []struct {
		name     string
		manifest string
		want     []pair
	}{
		{"pod network is eth0",
			vmiYAML(`[{name: p, masquerade: {}}]`, `[{name: p, pod: {}}]`),
			[]pair{{"p", "eth0", api.BindingMasquerade}}},
		{"multus networks are net1, net2 in spec.networks order",
			vmiYAML(`[{name: b, bridge: {}}, {name: a, sriov: {}}, {name: p, bridge: {}}]`,
				`[{name: p, pod: {}}, {name: a, multus: {networkName: nad-x}}, {name: b, multus: {networkName: nad-y}}]`),
			[]pair{{"p", "eth0", api.BindingBridge}, {"a", "net1", api.BindingSRIOV}, {"b", "net2", api.BindingBridge}}},
		{"a multus default is eth0 and does not count",
			vmiYAML(`[{name: d, bridge: {}}, {name: s1, bridge: {}}, {name: s2, macvtap: {}}]`,
				`[{name: s1, multus: {networkName: nad-x}}, {name: d, multus: {networkName: nad-y, default: true}}, {name: s2, multus: {networkName: nad-z}}]`),
			[]pair{{"s1", "net1", api.BindingBridge}, {"d", "eth0", api.BindingBridge}, {"s2", "net2", api.BindingMacvtap}}},
		{"only multus networks",
			vmiYAML(`[{name: s1, bridge: {}}]`, `[{name: s1, multus: {networkName: nad-x}}]`),
			[]pair{{"s1", "net1", api.BindingBridge}}},
		{"default network from SetDefaults",
			"metadata: {name: t}\nspec: {domain: {devices: {}}}\n",
			[]pair{{"default", "eth0", api.BindingBridge}}},
		{"no networks",
			"metadata: {name: t}\nspec: {domain: {devices: {autoattachPodInterface: false}}}\n",
			[]pair{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi, err := api.Load([]byte(tt.manifest))
			require.NoError(t, err)
			pairs, err := api.Pairs(vmi)
			require.NoError(t, err)
			got := []pair{}
			for _, p := range pairs {
				require.Same(t, &vmi.Spec.Domain.Devices.Interfaces[p.Index], p.Interface)
				require.Equal(t, p.Interface.Name, p.Network.Name)
				got = append(got, pair{p.Network.Name, p.PodInterface, p.Binding()})
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestPairsMissingInterface(t *testing.T) {
	vmi, err := api.Decode([]byte(vmiYAML(`[{name: a, bridge: {}}]`, `[{name: a, pod: {}}, {name: b, multus: {networkName: nad-x}}]`)))
	require.NoError(t, err)
	_, err = api.Pairs(vmi)
	require.ErrorIs(t, err, api.ErrInvalid)
	var fe *api.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "spec.networks[1].name", fe.Path)
	require.Equal(t, "b", fe.Value)
}

func TestVCPUsAndQueues(t *testing.T) {
	u := func(v bool) *bool { return &v }
	tests := []struct {
		name       string
		cpu        *api.CPU
		multiQueue *bool
		vcpus      uint32
		queues     int
	}{
		{"no cpu", nil, nil, 1, 0},
		{"no cpu, multiqueue", nil, u(true), 1, 1},
		{"zeros count as one", &api.CPU{}, u(true), 1, 1},
		{"cores", &api.CPU{Cores: 4}, nil, 4, 0},
		{"multiqueue off", &api.CPU{Cores: 4}, u(false), 4, 0},
		{"product", &api.CPU{Cores: 2, Sockets: 3, Threads: 2}, u(true), 12, 12},
		{"256 vCPUs", &api.CPU{Cores: 16, Sockets: 16}, u(true), 256, 256},
		{"queues capped at 256", &api.CPU{Cores: 64, Sockets: 8}, u(true), 512, api.MaxQueues},
		{"overflow saturates", &api.CPU{Cores: 1 << 16, Sockets: 1 << 16, Threads: 1 << 16}, u(true), math.MaxUint32, api.MaxQueues},
		{"exactly 2^32 saturates", &api.CPU{Cores: 1 << 16, Sockets: 1 << 16}, nil, math.MaxUint32, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &api.VMI{}
			vmi.Spec.Domain.CPU = tt.cpu
			vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue = tt.multiQueue
			require.Equal(t, tt.vcpus, vmi.VCPUs())
			require.Equal(t, tt.queues, vmi.Queues())
			require.Equal(t, tt.multiQueue != nil && *tt.multiQueue, vmi.MultiQueue())
		})
	}
}

func TestPairsHashedNames(t *testing.T) {
	m := "metadata: {name: t, annotations: {" + api.PodInterfaceNamesAnnotation + ": hashed}}\n" +
		"spec:\n  domain: {devices: {interfaces: [{name: p, masquerade: {}}, {name: blue, bridge: {}}, {name: red, bridge: {}}]}}\n" +
		"  networks: [{name: p, pod: {}}, {name: blue, multus: {networkName: nad-b}}, {name: red, multus: {networkName: nad-r}}]\n"
	vmi, err := api.Load([]byte(m))
	require.NoError(t, err)
	pairs, err := api.Pairs(vmi)
	require.NoError(t, err)
	require.Len(t, pairs, 3)
	require.Equal(t, "eth0", pairs[0].PodInterface, "the pod network keeps eth0")
	for _, p := range pairs[1:] {
		sum := sha256.Sum256([]byte(p.Network.Name))
		require.Equal(t, "pod"+hex.EncodeToString(sum[:])[:11], p.PodInterface)
		require.Equal(t, p.PodInterface, api.HashedPodInterface(p.Network.Name))
		require.LessOrEqual(t, len(p.PodInterface), 15, "fits IFNAMSIZ")
	}
	require.NotEqual(t, pairs[1].PodInterface, pairs[2].PodInterface)
}

// TestHostname: one derivation for DHCP and cloud-init (their own tests
// check that each uses it).
func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct{ name, vmName, specHostname, want string }{
		{"name", "vm1", "", "vm1"},
		{"name cut at the first dot", "fedora.lab.x", "", "fedora"},
		{"long name cut to 63", long, "", long[:63]},
		{"spec.hostname wins", "vm1", "web", "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vmi := &api.VMI{Metadata: api.ObjectMeta{Name: tt.vmName}, Spec: api.VMISpec{Hostname: tt.specHostname}}
			require.Equal(t, tt.want, vmi.Hostname())
		})
	}
}
