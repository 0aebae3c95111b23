package api_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// FuzzLoad feeds arbitrary manifests to Decode, SetDefaults and Validate:
// none may panic, every failure is an ErrDecode or a set of FieldErrors,
// and what Load accepts must pair up and stay valid.
//
//	go test ./api -run XXX -fuzz FuzzLoad -fuzztime 30s
func FuzzLoad(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "kubevirt", "*.yaml"))
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(data)
	}
	for _, m := range []string{
		vmiYAML(`[{name: a, masquerade: {}, ports: [{name: http, port: 80}], macAddress: "02:00:00:00:00:01", dhcpOptions: {ntpServers: ["1.2.3.4"], privateOptions: [{option: 240, value: v}]}}]`,
			`[{name: a, pod: {vmNetworkCIDR: "10.1.0.0/24", vmIPv6NetworkCIDR: "fd00::/120"}}]`),
		vmiYAML(`[{name: d, bridge: {}}, {name: s, sriov: {}, pciAddress: "0000:00:01.0"}]`,
			`[{name: s, multus: {networkName: n}}, {name: d, multus: {networkName: m, default: true}}]`),
		"kind: VirtualMachine\nmetadata: {name: vm}\nspec: {template: {spec: {domain: {cpu: {cores: 4294967295, sockets: 2}, devices: {networkInterfaceMultiqueue: true}}}}}\n",
		`{"kind":"VirtualMachineInstance","metadata":{"name":"j"},"spec":{"domain":{"devices":{"disks":[{"name":"d","bootOrder":1}]}},"volumes":[{"name":"d","emptyDisk":{"capacity":"1.5Gi"}}]}}`,
		"a: &a [*a]\n",
		"null",
		"[]",
	} {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vmi, err := api.Load(data)
		if err != nil {
			if errors.Is(err, api.ErrDecode) {
				return
			}
			require.ErrorIs(t, err, api.ErrInvalid)
			fes := api.FieldErrors(err)
			require.NotEmpty(t, fes, "a validation error without FieldErrors: %v", err)
			for _, fe := range fes {
				require.NotEmpty(t, fe.Path)
				require.NotEmpty(t, fe.Error())
			}
			return
		}
		require.Equal(t, api.KindVMI, vmi.Kind)
		require.NoError(t, api.Validate(vmi), "a loaded VMI stays valid")

		again, err := api.Decode(data)
		require.NoError(t, err)
		api.SetDefaults(again)
		api.SetDefaults(again)
		require.False(t, again.Validated(), "Decode and SetDefaults do not validate")
		require.NoError(t, api.Validate(again))
		require.Equal(t, vmi, again, "SetDefaults is idempotent")

		pairs, err := api.Pairs(vmi)
		require.NoError(t, err, "a valid VMI pairs up")
		require.Len(t, pairs, len(vmi.Spec.Networks))
		seen := map[string]bool{}
		for _, p := range pairs {
			require.False(t, seen[p.PodInterface], "pod interface %s used twice", p.PodInterface)
			seen[p.PodInterface] = true
			require.NotEmpty(t, p.Binding())
		}
		require.LessOrEqual(t, vmi.Queues(), api.MaxQueues)
	})
}

// FuzzLoadAliases feeds alias-heavy YAML to Load: anchors, aliases of
// scalars, sequences and mappings, merge keys, nesting and cycles. Load
// must not panic, must return an ErrDecode or FieldErrors on failure, and
// must never allocate more than 10× the manifest plus 8 MiB (aliases
// expand a document; the bound is what MaxAliasExpansion promises).
//
//	go test ./api -run '^$' -fuzz '^FuzzLoadAliases$' -fuzztime 30s
func FuzzLoadAliases(f *testing.F) {
	for _, m := range []string{
		aliasBomb(100, 100),
		aliasBomb(3, 10),
		laughs(4),
		"kind: VirtualMachineInstance\nmetadata: {name: t, labels: &l {a: b}, annotations: *l}\nspec: {domain: {devices: {}}, nodeSelector: *l}\n",
		"kind: VirtualMachineInstance\nmetadata: {name: t}\nspec:\n  domain: {devices: {interfaces: [&i {name: a, bridge: {}}, {<<: *i, name: b}]}}\n  networks: [{name: a, pod: {}}, {name: b, multus: {networkName: x}}]\n",
		"a: &a [*a]\n",
		"&x {a: *x}",
		"- &a [&b [&c [x]]]\n- [*a, *b, *c, *a, *b, *c]\n",
		"kind: VirtualMachine\nmetadata: {name: vm}\nspec:\n  template: &t\n    spec: {domain: {devices: {}}}\n  x: *t\n",
	} {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > api.MaxManifestSize {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := api.Load(data)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(10*len(data)+8<<20) {
			t.Fatalf("Load allocated %d bytes for a %d-byte manifest", n, len(data))
		}
		if err != nil {
			if !errors.Is(err, api.ErrDecode) {
				require.ErrorIs(t, err, api.ErrInvalid)
				require.NotEmpty(t, api.FieldErrors(err))
			}
		}
	})
}
