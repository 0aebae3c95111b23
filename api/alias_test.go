package api_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// aliasBomb is a manifest whose annotation anchors a size-byte string and
// whose spec holds n aliases of it (issue 11.5: 10 000 aliases of 10 KB,
// a 40 KB manifest, decoded to 867 MB).
func aliasBomb(n, size int) string {
	var b strings.Builder
	b.WriteString("kind: VirtualMachineInstance\nmetadata:\n  name: t\n  annotations:\n    big: &a " + strings.Repeat("x", size) +
		"\nspec:\n  domain:\n    devices: {}\n  nodeSelector: {k: v}\n  tolerations: [")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("*a")
	}
	b.WriteString("]\n")
	return b.String()
}

// laughs is the billion-laughs shape: each level a list of ten aliases of
// the level before.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("kind: VirtualMachineInstance\nmetadata: {name: t}\nspec:\n  domain: {devices: {}}\n  tolerations:\n  - &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  - &l%d [", i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// allocated is the memory Decode allocates for data (an upper bound of its
// peak heap).
func allocated(data []byte) (uint64, error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := api.Decode(data)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// TestAliasExpansionBounded: YAML aliases cannot make a manifest cost more
// than a small multiple of its size. Each bomb is refused with a
// error matching ErrDecode and ErrAliasExpansion, and Decode allocates at most 10×
// the manifest plus 4 MiB doing so (before: 910 MB for the 40 KB bomb).
func TestAliasExpansionBounded(t *testing.T) {
	tests := []struct {
		name     string
		manifest string
		text     string
	}{
		{"10000 aliases of 10 KB (40 KB)", aliasBomb(10000, 10000), "expands to more than"},
		{"20000 aliases of 30 KB (90 KB)", aliasBomb(20000, 30000), "expands to more than"},
		{"400 aliases of 1 KB (2 KB)", aliasBomb(400, 1000), "expands to more than"},
		{"billion laughs, 9 levels", laughs(9), "expands to more than"},
		{"aliases of a mapping", "kind: VirtualMachineInstance\nmetadata: {name: t, annotations: &m {" +
			strings.Repeat("k: "+strings.Repeat("v", 100)+", ", 1)[:0] + "a: " + strings.Repeat("v", 5000) + "}}\nspec:\n  domain: {devices: {}}\n  nodeSelector: &n {a: *m}\n  tolerations: [" +
			strings.TrimSuffix(strings.Repeat("*m,", 200), ",") + "]\n", "expands to more than"},
		{"an anchor containing its own alias", "kind: VirtualMachineInstance\nmetadata: {name: t}\nspec: &s {domain: {devices: {}}, x: *s}\n", "contains an alias of itself"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.manifest)
			require.Less(t, len(data), api.MaxManifestSize)
			n, err := allocated(data)
			require.ErrorIs(t, err, api.ErrDecode)
			require.ErrorIs(t, err, api.ErrAliasExpansion)
			require.ErrorContains(t, err, tc.text)
			require.LessOrEqual(t, n, uint64(10*len(data)+4<<20), "allocated %d bytes for a %d-byte manifest", n, len(data))
			_, err = api.Load(data)
			require.ErrorIs(t, err, api.ErrAliasExpansion)
		})
	}
}

// TestAliasesThatShorten: aliases as people use them (one block reused, a
// merge key) still load, and mean what they say.
func TestAliasesThatShorten(t *testing.T) {
	vmi, err := api.Load([]byte(`
kind: VirtualMachineInstance
metadata:
  name: t
  labels: &labels {app: web, tier: front}
  annotations: *labels
spec:
  domain:
    resources: {requests: &res {memory: 1Gi}, limits: *res}
    devices:
      interfaces:
      - &nic {name: default, masquerade: {}, ports: [{port: 80}]}
      - <<: *nic
        name: second
        bridge: {}
        masquerade: null
  nodeSelector: *labels
  networks: [{name: default, pod: {}}, {name: second, multus: {networkName: nad}}]
`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"app": "web", "tier": "front"}, vmi.Metadata.Annotations)
	require.Equal(t, "1Gi", vmi.Spec.Domain.Resources.Limits["memory"])
	second := vmi.Spec.Domain.Devices.Interfaces[1]
	require.Equal(t, api.BindingBridge, second.Binding())
	require.Equal(t, []api.Port{{Port: 80, Protocol: "TCP"}}, second.Ports)
	require.False(t, errors.Is(err, api.ErrAliasExpansion))
}
