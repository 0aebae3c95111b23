package migration_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/migration"
)

type peerInput struct {
	Plugins map[string]migration.Plugin `json:"plugins"`
	Cases   []struct {
		Name string          `json:"name"`
		VMI  json.RawMessage `json:"vmi"`
	} `json:"cases"`
}

type peerAnswer struct {
	Name       string `json:"name"`
	Migratable bool   `json:"migratable"`
	Error      string `json:"error"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v))
}

// TestCheckKubeVirt: Check gives, on every case of
// testdata/kubevirt-v1.9.0-migratable.in.json, the answer KubeVirt
// v1.9.0's own VerifyVMIMigratable gave (testdata/kubevirt-v1.9.0-
// migratable.json; testdata/README.md says where it came from), and its message
// starts with KubeVirt's.
func TestCheckKubeVirt(t *testing.T) {
	var in peerInput
	var want []peerAnswer
	readJSON(t, "testdata/kubevirt-v1.9.0-migratable.in.json", &in)
	readJSON(t, "testdata/kubevirt-v1.9.0-migratable.json", &want)
	require.Len(t, want, len(in.Cases))
	for i, c := range in.Cases {
		t.Run(c.Name, func(t *testing.T) {
			require.Equal(t, c.Name, want[i].Name)
			// As KubeVirt's function saw it: decoded, without the
			// defaults (KubeVirt's webhook would have added a bridge
			// interface to the VMI without any).
			vmi, err := api.DecodeKubeVirt(c.VMI)
			require.NoError(t, err)
			plan, err := migration.Check(vmi, in.Plugins)
			if want[i].Migratable {
				require.NoError(t, err)
				require.NotNil(t, plan)
				return
			}
			var nm *migration.NotMigratableError
			require.ErrorAs(t, err, &nm)
			require.True(t, strings.HasPrefix(err.Error(), want[i].Error+": "), "%q does not start with KubeVirt's %q", err, want[i].Error)
		})
	}
}

func loadVMI(t *testing.T, manifest string) *api.VMI {
	t.Helper()
	vmi, err := api.Load([]byte(manifest))
	require.NoError(t, err)
	return vmi
}

const head = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vm, uid: 6f1b4f4e-0000-4000-8000-000000000024%s}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      interfaces:
`

// TestCheckBlocker: which interface blocks, the field to change, and
// what each interface of a migratable VMI needs.
func TestCheckBlocker(t *testing.T) {
	plugins := map[string]migration.Plugin{
		"refresh": {Migration: &migration.PluginMigration{Method: migration.MethodLinkRefresh}},
		"plain":   {Migration: &migration.PluginMigration{}},
		"nomig":   {},
	}
	for _, tc := range []struct {
		name, annotations, ifaces, nets string
		blocker                         *migration.NotMigratableError
		actions                         map[string]migration.Action
	}{{
		name:   "bridge without the annotation",
		ifaces: "      - {name: default, bridge: {}}\n", nets: "  - {name: default, pod: {}}\n",
		blocker: &migration.NotMigratableError{Interface: "default", Binding: "bridge", Field: "metadata.annotations"},
	}, {
		name:   "plugin without migration",
		ifaces: "      - {name: default, binding: {name: nomig}}\n", nets: "  - {name: default, pod: {}}\n",
		blocker: &migration.NotMigratableError{Interface: "default", Binding: "nomig", Field: "spec.domain.devices.interfaces[0]"},
	}, {
		name:   "slirp second in the list",
		ifaces: "      - {name: blue, bridge: {}}\n      - {name: default, slirp: {}}\n", nets: "  - {name: blue, multus: {networkName: blue}}\n  - {name: default, pod: {}}\n",
		blocker: &migration.NotMigratableError{Interface: "default", Binding: "slirp", Field: "spec.domain.devices.interfaces[1]"},
	}, {
		name:        "bridge with the annotation, SR-IOV, plugins",
		annotations: `, annotations: {kubevirt.io/allow-pod-bridge-network-live-migration: ""}`,
		ifaces: "      - {name: default, bridge: {}}\n      - {name: vf, sriov: {}}\n      - {name: r, binding: {name: refresh}}\n" +
			"      - {name: p, binding: {name: plain}}\n      - {name: gone, bridge: {}, state: absent}\n",
		nets: "  - {name: default, pod: {}}\n  - {name: vf, multus: {networkName: vf}}\n  - {name: r, multus: {networkName: r}}\n" +
			"  - {name: p, multus: {networkName: p}}\n  - {name: gone, multus: {networkName: gone}}\n",
		actions: map[string]migration.Action{"default": migration.ActionLinkRefresh, "vf": migration.ActionDetachReattach,
			"r": migration.ActionLinkRefresh, "p": migration.ActionNone},
	}, {
		name:    "passtBinding and macvtap",
		ifaces:  "      - {name: default, passtBinding: {}}\n      - {name: blue, macvtap: {}}\n",
		nets:    "  - {name: default, pod: {}}\n  - {name: blue, multus: {networkName: blue}}\n",
		actions: map[string]migration.Action{"default": migration.ActionNone, "blue": migration.ActionNone},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := strings.Replace(head, "%s", tc.annotations, 1) + tc.ifaces + "  networks:\n" + tc.nets
			plan, err := migration.Check(loadVMI(t, m), plugins)
			if tc.blocker != nil {
				var nm *migration.NotMigratableError
				require.ErrorAs(t, err, &nm)
				nm.Why = ""
				require.Equal(t, tc.blocker, nm)
				return
			}
			require.NoError(t, err)
			got := map[string]migration.Action{}
			for _, i := range plan.Interfaces {
				got[i.Name] = i.Action
			}
			require.Equal(t, tc.actions, got)
		})
	}
}
