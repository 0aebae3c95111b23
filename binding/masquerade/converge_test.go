package masquerade_test

import (
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/virtnet/virtnet/testrig/testutil/phase1test"
)

const vmiManifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-masquerade, namespace: default, uid: 6f4c5d2e-1b3a-4c5d-9e8f-0a1b2c3d4e5f}
spec:
  domain:
    devices:
      interfaces: [{name: default, masquerade: {}, ports: [{name: http, port: 80}, {port: 53, protocol: UDP}]}]
  networks: [{name: default, pod: {}}]
`

var scenarios = []phase1test.Scenario{
	{Name: "masquerade", VMI: vmiManifest, MinCalls: 6, Links: []netdrivertest.SimLink{{Name: "eth0"}}},
}

// TestConverge: phase1 with the masquerade binding with ports runs twice without a
// change, converges after a failure at every mutating kernel call, rolls
// back to the CNI's state and cleans up (see phase1test).
func TestConverge(t *testing.T) {
	phase1test.Converge(t, scenarios...)
}
