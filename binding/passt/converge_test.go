package passt_test

import (
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/virtnet/virtnet/testrig/testutil/phase1test"
)

const vmiManifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-passt, namespace: default, uid: 6f4c5d2e-1b3a-4c5d-9e8f-0a1b2c3d4e5f}
spec:
  domain:
    devices:
      interfaces: [{name: default, passt: {}}]
  networks: [{name: default, pod: {}}]
`

var scenarios = []phase1test.Scenario{
	{Name: "passt", VMI: vmiManifest, Links: []netdrivertest.SimLink{{Name: "eth0"}}},
}

// TestConverge: phase1 with the passt binding (its sysctls) runs twice without a
// change, converges after a failure at every mutating kernel call, rolls
// back to the CNI's state and cleans up (see phase1test).
func TestConverge(t *testing.T) {
	phase1test.Converge(t, scenarios...)
}
