package names_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
)

func TestLinkNames(t *testing.T) {
	blue := api.HashedPodInterface("blue")
	for _, tc := range []struct {
		pod              string
		primary          bool
		bridge, tap, nic string
	}{
		{"eth0", true, "k6t-eth0", "tap0", "eth0-nic"},
		{"ovn-udn1", true, "k6t-ovn-udn1", "tap0", "ovn-udn1-nic"},
		{"net1", false, "k6t-net1", "tap1", "net1-nic"},
		{"net12", false, "k6t-net12", "tap12", "net12-nic"},
		{"net1234567", false, "k6t-net1234567", "tap1234567", "net1234567-nic"},
		{"net123456789", false, "k6t-" + hash("bridge", "net123456789")[:11], "tap123456789", "nic-" + hash("nic", "net123456789")[:11]},
		{blue, false, "k6t-16477688c0e", "tap16477688c0e", "16477688c0e-nic"},
		{"eth0123456789ab", true, "k6t-" + hash("bridge", "eth0123456789ab")[:11], "tap0", "nic-" + hash("nic", "eth0123456789ab")[:11]},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			require.Equal(t, tc.bridge, names.Bridge(tc.pod))
			require.Equal(t, tc.tap, names.Tap(tc.pod, tc.primary))
			require.Equal(t, tc.nic, names.NIC(tc.pod))
			require.Equal(t, names.Links{Bridge: tc.bridge, Tap: tc.tap, NIC: tc.nic}, names.For(tc.pod, tc.primary))
			for _, n := range []string{names.Bridge(tc.pod), names.Tap(tc.pod, tc.primary), names.NIC(tc.pod)} {
				require.NoError(t, names.CheckLinkName(n))
			}
		})
	}
	require.NotEqual(t, names.Bridge("eth0123456789ab"), names.Bridge("eth0123456789ac"), "short forms differ")
	// virtnet's (before v0.1.0) names, which readers of its records look for.
	require.Equal(t, "k6t-58d19be530f", names.LegacyBridge(blue))
	require.Equal(t, "nic-11633301eec", names.LegacyNIC(blue))
	require.Equal(t, "k6t-eth0", names.LegacyBridge("eth0"))
	require.Equal(t, "net1-nic", names.LegacyNIC("net1"))
}

// kubevirtNames is one network of testdata/kubevirt-v1.9.0-json:
// what KubeVirt v1.9.0's own functions derive for it (see
// testdata/README.md).
type kubevirtNames struct {
	Network                string `json:"network"`
	Kind                   string `json:"kind"`
	StatusPodInterfaceName string `json:"statusPodInterfaceName"`
	PodInterface           string `json:"podInterface"`
	PodInterfaceOrdinal    string `json:"podInterfaceOrdinal"`
	Bridge                 string `json:"bridge"`
	NIC                    string `json:"nic"`
	Tap                    string `json:"tap"`
	BridgeOrdinal          string `json:"bridgeOrdinal"`
	NICOrdinal             string `json:"nicOrdinal"`
	TapOrdinal             string `json:"tapOrdinal"`
}

// TestKubeVirtNames checks the pod interface names of api.Pairs (hashed
// and ordinal) and the bridge, NIC and tap names derived from them against
// KubeVirt v1.9.0's own namescheme and link functions, bit for bit.
func TestKubeVirtNames(t *testing.T) {
	b, err := os.ReadFile("testdata/kubevirt-v1.9.0-names.json")
	require.NoError(t, err)
	var cases []kubevirtNames
	require.NoError(t, json.Unmarshal(b, &cases))
	require.NotEmpty(t, cases)
	network := func(c kubevirtNames) api.Network {
		n := api.Network{Name: c.Network}
		switch c.Kind {
		case "pod":
			n.Pod = &api.PodNetwork{}
		case "multus", "multus-default":
			n.Multus = &api.MultusNetwork{NetworkName: "nad-" + c.Network, Default: c.Kind == "multus-default"}
		default:
			t.Fatalf("kind %q", c.Kind)
		}
		return n
	}
	// The VMIs: each primary network alone, and the Multus networks in the
	// file's order (the order the ordinal names count in).
	vmi := func(nets ...api.Network) *api.VMI {
		v := &api.VMI{Spec: api.VMISpec{Networks: nets}}
		for _, n := range nets {
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, api.Interface{Name: n.Name, Bridge: &struct{}{}})
		}
		return v
	}
	var secondary []api.Network
	for _, c := range cases {
		if c.Kind == "multus" {
			secondary = append(secondary, network(c))
		}
	}
	pairs := func(v *api.VMI, scheme string) map[string]api.Pair {
		v.Metadata.Annotations = map[string]string{api.PodInterfaceNamesAnnotation: scheme}
		ps, err := api.Pairs(v)
		require.NoError(t, err)
		out := map[string]api.Pair{}
		for _, p := range ps {
			out[p.Network.Name] = p
		}
		return out
	}
	for _, c := range cases {
		t.Run(c.Network, func(t *testing.T) {
			v := vmi(secondary...)
			if c.Kind != "multus" {
				v = vmi(network(c))
			}
			hashed, ordinal := pairs(v, "hashed")[c.Network], pairs(v, "ordinal")[c.Network]
			pod := hashed.PodInterface
			if c.StatusPodInterfaceName != "" {
				pod = c.StatusPodInterfaceName // as kvplugin.Resolve takes it from the status
			}
			require.Equal(t, c.PodInterface, pod, "hashed pod interface")
			require.Equal(t, c.PodInterfaceOrdinal, ordinal.PodInterface, "ordinal pod interface")
			require.Equal(t, c.Kind != "multus", hashed.Primary())
			for _, n := range []struct{ pod, bridge, nic, tap string }{
				{pod, c.Bridge, c.NIC, c.Tap},
				{ordinal.PodInterface, c.BridgeOrdinal, c.NICOrdinal, c.TapOrdinal},
			} {
				require.Equal(t, n.bridge, names.Bridge(n.pod), "bridge of %s", n.pod)
				require.Equal(t, n.nic, names.NIC(n.pod), "nic of %s", n.pod)
				require.Equal(t, n.tap, names.Tap(n.pod, hashed.Primary()), "tap of %s", n.pod)
			}
		})
	}
}

func TestCheckLinkName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "a:b", "a\x00b", "a\tb", strings.Repeat("x", 16)} {
		require.Error(t, names.CheckLinkName(bad), "%q", bad)
	}
	for _, good := range []string{"eth0", "k6t-eth0", strings.Repeat("x", 15), "a.b", "..."} {
		require.NoError(t, names.CheckLinkName(good), "%q", good)
	}
}

func TestBridgeLinkLocal(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "169.254.75.10/32"}, {9, "169.254.75.19/32"}, {10, "169.254.75.110/32"},
		{63, "169.254.75.163/32"}, {99, "169.254.75.199/32"}, {100, "169.254.76.0/32"},
		{355, "169.254.76.255/32"}, {356, "169.254.77.0/32"},
	} {
		require.Equal(t, tc.want, names.BridgeLinkLocal(tc.i).String(), "index %d", tc.i)
	}
	seen := map[string]int{}
	for i := range 1000 {
		a := names.BridgeLinkLocal(i).String()
		j, dup := seen[a]
		require.False(t, dup, "index %d and %d share %s", i, j, a)
		seen[a] = i
	}
}

func TestVMMAC(t *testing.T) {
	a := names.VMMAC("uid-1", "default")
	require.Equal(t, a, names.VMMAC("uid-1", "default"), "stable")
	require.NotEqual(t, a, names.VMMAC("uid-2", "default"))
	require.NotEqual(t, a, names.VMMAC("uid-1", "other"))
	require.NotEqual(t, a, names.BridgeMAC("uid-1", "default"))
	for i := range 2000 {
		m := names.VMMAC("uid", strings.Repeat("i", i%40)+string(rune('a'+i%26)))
		require.Equal(t, byte(2), m[0]&3, "locally administered unicast: %s", m)
		require.NotEqual(t, api.MasqueradeBridgeMAC, m.String())
	}
}

// TestVMMACNeverReserved derives the VM and bridge MACs of 10 000 VMI UIDs
// (and of UIDs whose digest starts with 0xfe, seen with real UIDs before):
// every MAC is unicast, locally administered, never starts with fe: (the
// host side of libvirt's taps) and is never the masquerade bridge's.
func TestVMMACNeverReserved(t *testing.T) {
	tests := []struct {
		name string
		uids []string
	}{
		{"digest starting with fe", []string{"5d2b8f3c-7a1e-4c9b-9f00-000000000003", "5d2b8f3c-7a1e-4c9b-9f00-000000000007"}},
		{"10000 UIDs", func() []string {
			out := make([]string, 10000)
			for i := range out {
				out[i] = fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761%(1<<32), i%65536, i%4096, (i*7)%4096, i*40503)
			}
			return out
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := 0
			for _, uid := range tc.uids {
				for _, m := range []net.HardwareAddr{names.VMMAC(uid, "default"), names.VMMAC(uid, "net1"), names.BridgeMAC(uid, "default")} {
					require.Len(t, m, 6)
					require.Equal(t, byte(0x02), m[0]&0x03, "%s: locally administered unicast: %s", uid, m)
					require.NotEqual(t, byte(0xfe), m[0], "%s: %s starts with fe:", uid, m)
					require.NotEqual(t, api.MasqueradeBridgeMAC, m.String())
					if m[0] == 0xfa {
						fe++
					}
				}
			}
			require.NotZero(t, fe, "no UID of the set hit the fe: case")
		})
	}
	require.Equal(t, "fa", names.VMMAC("5d2b8f3c-7a1e-4c9b-9f00-000000000003", "default").String()[:2])
}

// hash is the hex digest behind a short form.
func hash(kind, pod string) string { return names.ShortForm(kind, "", pod, strings.Repeat("x", 99)) }
