package macvtap_test

import (
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/testrig/testutil/phase1test"
)

const vmiManifest = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-macvtap, namespace: default, uid: 6f4c5d2e-1b3a-4c5d-9e8f-0a1b2c3d4e5f}
spec:
  domain:
    devices:
      interfaces: [{name: macvtap, macvtap: {}, macAddress: "02:00:00:00:be:ef"}]
  networks: [{name: macvtap, multus: {networkName: macvtapnetwork}}]
`

var scenarios = []phase1test.Scenario{
	{Name: "macvtap", VMI: vmiManifest, Links: []netdrivertest.SimLink{{Name: "net1", Type: netdriver.TypeMacvtap}}},
}

// TestConverge: phase1 with the macvtap binding (the VMI's MAC on the macvtap link) runs twice without a
// change, converges after a failure at every mutating kernel call, rolls
// back to the CNI's state and cleans up (see phase1test).
func TestConverge(t *testing.T) {
	phase1test.Converge(t, scenarios...)
}
