//go:build linux

package reliability_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const uid = "7a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"

const bridgeVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-bridge, namespace: default, uid: ` + uid + `}
spec:
  domain: {devices: {interfaces: [{name: default, bridge: {}}]}}
  networks: [{name: default, pod: {}}]
`

const masqueradeVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-masq, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}, ports: [{name: http, port: 80}, {port: 53, protocol: UDP}]}
  networks: [{name: default, pod: {}}]
`

const passtVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-passt, namespace: default, uid: ` + uid + `}
spec:
  domain: {devices: {interfaces: [{name: default, passt: {}, ports: [{name: http, port: 80}]}]}}
  networks: [{name: default, pod: {}}]
`

const macvtapVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-macvtap, namespace: default, uid: ` + uid + `}
spec:
  domain: {devices: {interfaces: [{name: macvtap, macvtap: {}, macAddress: "02:5a:00:00:00:07"}]}}
  networks: [{name: macvtap, multus: {networkName: macvtapnetwork}}]
`

// cacheFiles is testutil.CacheFiles without the VMIs' lock files, which
// a killed run may leave: the records alone.
func cacheFiles(tb testing.TB, s *cache.Store) map[string]string {
	tb.Helper()
	out := testutil.CacheFiles(tb, s)
	maps.DeleteFunc(out, func(k, _ string) bool { return strings.HasPrefix(k, ".lock-") })
	return out
}

// loadYAMLWithUID replaces the test UID in a VMI manifest.
func loadYAMLWithUID(yaml, newUID string) string {
	return strings.ReplaceAll(yaml, uid, newUID)
}

// loadVMIErr is api.Load for goroutines other than the test's.
func loadVMIErr(yaml string) (*api.VMI, error) { return api.Load([]byte(yaml)) }
