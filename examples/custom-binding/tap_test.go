package tapbinding_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	tapbinding "github.com/virtnet/virtnet/examples/custom-binding"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/testutil/phase1test"
)

// vmiYAML is a VMI with the example binding on the pod network, next to a
// masquerade interface of virtnet's own on a second network.
const vmiYAML = `
kind: VirtualMachineInstance
metadata: {name: vm1, namespace: default, uid: 6a1f3a0e-2d4c-4b8e-9f35-0c1d2e3f4a5b}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, binding: {name: example-tap}, macAddress: "02:11:22:33:44:55", bootOrder: 1}
  networks: [{name: default, pod: {}}]
`

// reg is virtnet's bindings with the example's.
func reg() binding.Registry {
	r := registry.Default()
	r[tapbinding.Name] = tapbinding.Binding{}
	return r
}

// TestOnlyPublicImports: the binding is written as an outside module
// would write it: it imports no internal package of virtnet (the Go
// toolchain would refuse one outside this module) and no kernel driver.
func TestOnlyPublicImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/virtnet/virtnet/binding")
	for _, dep := range deps {
		if !strings.HasPrefix(dep, "github.com/virtnet/virtnet/") {
			continue
		}
		require.NotContains(t, dep, "/internal", "the example imports %s", dep)
		require.NotEqual(t, "github.com/virtnet/virtnet/netdriver/kernel", dep)
	}
}

// TestConverge: virtnet's convergence cases (run twice, fail every
// kernel call in turn and re-run, rollback, Cleanup) hold for the outside
// binding too.
func TestConverge(t *testing.T) {
	phase1test.Converge(t, phase1test.Scenario{
		Name: "tap", VMI: vmiYAML, Registry: reg(),
		Links:    []netdrivertest.SimLink{{Name: "eth0"}},
		MinCalls: 3, // add the tap (MTU given at creation), mark it, up
	})
}

// TestBothPhases: phase1 on a fake pod makes the marked tap with the
// pod's MTU and the VM's owner; phase2 renders the domain from the record
// (golden, schema-checked and defined by libvirt's test driver); an
// unregistered plugin name is a typed error naming it.
func TestBothPhases(t *testing.T) {
	vmi := testutil.LoadVMI(t, vmiYAML)
	f, store := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}), testutil.NewStore(t)
	ctx := context.Background()
	require.NoError(t, phase1.Run(ctx, vmi, "", store, phase1.Options{Driver: f, Registry: reg()}))
	tap, err := f.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, netdriver.TypeTuntap, tap.Type)
	require.True(t, tap.Up)
	require.Equal(t, 1440, tap.MTU)
	require.Equal(t, 0, tap.TapOwner, "a root VMI's tap is root's")
	require.Contains(t, tap.AltNames, binding.Mark(netdriver.TypeTuntap, vmi.Metadata.UID, "default"))

	dom, err := phase2.Domain(ctx, vmi, store, phase2.Options{Registry: reg()})
	require.NoError(t, err)
	testutil.CheckDomain(t, dom, testutil.GoldenPath(t, "domain", ".xml"))

	_, err = phase2.Domain(ctx, vmi, store, phase2.Options{})
	require.ErrorIs(t, err, binding.ErrUnknownMethod)
	require.ErrorContains(t, err, "binding: no implementation of method "+tapbinding.Name)
}

// TestForeignTapKept: a tap0 this binding did not make is refused and
// survives Cleanup.
func TestForeignTapKept(t *testing.T) {
	vmi := testutil.LoadVMI(t, vmiYAML)
	f, store := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}), testutil.NewStore(t)
	require.NoError(t, f.AddTap(netdriver.Tap{Name: "tap0", Owner: 0, Group: 0}))
	require.NoError(t, f.SetUp("tap0"))
	ctx := context.Background()
	opts := phase1.Options{Driver: f, Registry: reg()}
	err := phase1.Run(ctx, vmi, "", store, opts)
	var foreign *tapbinding.ForeignTapError
	require.ErrorAs(t, err, &foreign)
	require.True(t, phase1.IsPermanent(err))
	require.NoError(t, phase1.Cleanup(ctx, vmi, "", store, opts))
	_, err = f.LinkByName("tap0")
	require.NoError(t, err, "the foreign tap is kept")
}
