//go:build linux

package phase1_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestRecordsBoundToNamespace: the records of a VMI are bound to the
// namespace they describe. A Run or a Cleanup of the VMI given another
// pod's namespace (a DEL with the wrong CNI_NETNS, an ADD of a reused
// container ID) is refused with a permanent *cache.NamespaceMismatchError
// before any change: the other pod keeps its bridge, tap and NAT table,
// and the VMI keeps its records.
func TestRecordsBoundToNamespace(t *testing.T) {
	mine, theirs := testutil.NewPod(t), testutil.NewPod(t)
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	other := testutil.LoadVMI(t, strings.Replace(masqueradeVMI, uid, "their-vmi", 1))
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, mine.Pod.Path, s, phase1.Options{}))
	require.NoError(t, phase1.Run(context.Background(), other, theirs.Pod.Path, s, phase1.Options{}))
	files := testutil.CacheFiles(t, s)
	before := linkDump(t, theirs.Pod)
	nat := natRules(t, theirs.Pod)
	require.NotEmpty(t, nat)

	for name, f := range map[string]func() error{
		"Run":     func() error { return phase1.Run(context.Background(), vmi, theirs.Pod.Path, s, phase1.Options{}) },
		"Cleanup": func() error { return phase1.Cleanup(context.Background(), vmi, theirs.Pod.Path, s, phase1.Options{}) },
	} {
		err := f()
		var me *cache.NamespaceMismatchError
		require.ErrorAs(t, err, &me, name)
		require.True(t, phase1.IsPermanent(err), name)
		var pe *phase1.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, phase1.StepNamespace, pe.Step)
		require.Equal(t, before, linkDump(t, theirs.Pod), name)
		require.Equal(t, nat, natRules(t, theirs.Pod), name)
		require.Equal(t, files, testutil.CacheFiles(t, s), name)
	}
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, mine.Pod.Path, s, phase1.Options{}), "its own namespace")
	require.Equal(t, nat, natRules(t, theirs.Pod))
}

// TestMasqueradeCleanupLeavesForeignNAT: a masquerade Cleanup whose
// records point at a namespace where the bridge is another VMI's (marks)
// leaves that namespace's NAT tables, bridge and tap alone.
func TestMasqueradeCleanupLeavesForeignNAT(t *testing.T) {
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	other := testutil.LoadVMI(t, strings.Replace(masqueradeVMI, uid, "their-vmi", 1))
	s := testutil.NewStore(t)
	require.NoError(t, run(t, vmi, netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"}), s, phase1.Options{}))
	theirs := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	require.NoError(t, run(t, other, theirs, testutil.NewStore(t), phase1.Options{}))
	before := theirs.Snapshot()
	require.NotEmpty(t, before.NAT)
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, "", s, phase1.Options{Driver: theirs}))
	require.Equal(t, before, theirs.Snapshot(), "the other VMI's NAT, bridge and tap stay")
}

// TestFailedFirstRunLeavesNoDirectory: a first run that fails after
// writing records (ENOBUFS at each mutating call in turn) rolls back and
// leaves no record directory for the VMI, namespace record included.
func TestFailedFirstRunLeavesNoDirectory(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true})
	vmi := testutil.LoadVMI(t, bridgeVMI)
	for n := 1; n <= 3; n++ {
		s := testutil.NewStore(t)
		seen := 0
		d := &intercept.Driver{Inner: kernelDriver(t, pod.Pod.Path), Before: func(c intercept.Call) error {
			if c.Mutating {
				if seen++; seen == n {
					return syscall.ENOBUFS
				}
			}
			return nil
		}}
		err := phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{Driver: d})
		require.ErrorIs(t, err, syscall.ENOBUFS)
		ents, err := os.ReadDir(s.Root())
		require.NoError(t, err)
		require.Empty(t, ents, "fault at mutating call %d: nothing left in the store", n)
	}
}

// kernelDriver opens the kernel driver of the namespace at path, closed
// when the test ends.
func kernelDriver(t *testing.T, path string) *kernel.Netlink {
	t.Helper()
	d, err := kernel.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// natRules lists virtnet's IPv4 and IPv6 NAT rules in ns.
func natRules(t *testing.T, ns *testutil.NS) []string {
	t.Helper()
	d := kernelDriver(t, ns.Path)
	var out []string
	for _, fam := range []netdriver.Family{netdriver.IPv4, netdriver.IPv6} {
		r, err := d.NATRules(fam)
		require.NoError(t, err)
		out = append(out, r...)
	}
	return out
}

// TestNilRegistryEntryRefused: a registry that maps a method to a nil
// binding makes Run and Cleanup fail with an error naming the method,
// before any kernel call, instead of panicking.
func TestNilRegistryEntryRefused(t *testing.T) {
	vmi := testutil.LoadVMI(t, bridgeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	reg := binding.Registry{api.BindingBridge: nil}
	s := testutil.NewStore(t)
	err := run(t, vmi, f, s, phase1.Options{Registry: reg})
	require.ErrorIs(t, err, binding.ErrUnknownMethod)
	require.Contains(t, err.Error(), "method bridge is registered with a nil implementation")
	require.Empty(t, f.Calls())
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	err = phase1.Cleanup(context.Background(), vmi, "", s, phase1.Options{Driver: f, Registry: reg})
	require.ErrorIs(t, err, binding.ErrUnknownMethod)
}
