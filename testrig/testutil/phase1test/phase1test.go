// Package phase1test proves that phase1 converges for a binding, on the
// fake kernel (netdrivertest.SimulatedPod), so that each binding's package
// holds its own convergence cases ([Converge]) and phase1's tests keep
// what is phase1's (several bindings in one VMI, locks, records):
//
//   - a second run changes nothing in the kernel, rewrites no cache byte
//     and makes no mutating call;
//   - failing each mutating kernel call of a clean run in turn, with and
//     without Options.KeepOnFailure, then running again reaches the clean
//     run's kernel state and cache bytes;
//   - a failed run that rolls back leaves the namespace as the CNI left it;
//   - Cleanup without a run, after a run and twice returns the namespace
//     to how the CNI left it and removes every record, and a run after it
//     works.
//
// A test rig: importable so that every package's tests can use it, outside
// the compatibility promise (testrig/apicompat leaves testrig/ out), never
// imported by product code (testrig/layers).
package phase1test

import (
	"context"
	"errors"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// Scenario is a VMI and the pod the CNI left for it.
type Scenario struct {
	Name string
	// VMI is the manifest.
	VMI   string
	Links []netdrivertest.SimLink
	// MinCalls is the fewest mutating kernel calls a clean run must make
	// (a bound that keeps the fail-at-every-step case from passing
	// vacuously); 0 means 1.
	MinCalls int
	// Registry is the bindings the runs use; nil means registry.Default()
	// (an outside binding's test adds itself to it).
	Registry binding.Registry
}

// Pod is a fresh fake pod of the scenario.
func (sc Scenario) Pod() *netdrivertest.Fake { return netdrivertest.SimulatedPod(sc.Links...) }

func (sc Scenario) run(ctx context.Context, vmi *api.VMI, f *netdrivertest.Fake, s *cache.Store, opts phase1.Options) error {
	opts.Driver, opts.Registry = f, sc.Registry
	return phase1.Run(ctx, vmi, "", s, opts)
}

// Converge runs the convergence cases (see the package doc) of every
// scenario as subtests "<scenario>/<case>".
func Converge(t *testing.T, scenarios ...Scenario) {
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Run("run twice", func(t *testing.T) { RunTwice(t, sc) })
			t.Run("fail at every step", func(t *testing.T) { FailAtEveryStep(t, sc) })
			t.Run("rollback", func(t *testing.T) { RollbackLeavesCNIState(t, sc) })
			t.Run("cleanup", func(t *testing.T) { Cleanup(t, sc) })
		})
	}
}

// RunTwice: a second run changes nothing in the kernel and rewrites no
// cache byte.
func RunTwice(t *testing.T, sc Scenario) {
	vmi := testutil.LoadVMI(t, sc.VMI)
	f, s := sc.Pod(), testutil.NewStore(t)
	ctx := context.Background()
	require.NoError(t, sc.run(ctx, vmi, f, s, phase1.Options{}))
	snap, cached, calls := f.Snapshot(), testutil.CacheFiles(t, s), len(f.Calls())
	require.NoError(t, sc.run(ctx, vmi, f, s, phase1.Options{}))
	require.Equal(t, snap, f.Snapshot())
	require.Equal(t, cached, testutil.CacheFiles(t, s))
	require.Equal(t, f.Calls()[:calls], f.Calls(), "the second run made mutating calls: %v", f.Calls()[calls:])
}

// FailAtEveryStep fails each mutating kernel call of a clean run in turn;
// the failed run either rolls back or (KeepOnFailure, as after a crash)
// leaves its work, and a re-run converges to the clean run's state.
func FailAtEveryStep(t *testing.T, sc Scenario) {
	vmi := testutil.LoadVMI(t, sc.VMI)
	ctx := context.Background()
	injected := errors.New("injected")
	clean, cleanStore := sc.Pod(), testutil.NewStore(t)
	require.NoError(t, sc.run(ctx, vmi, clean, cleanStore, phase1.Options{}))
	want, wantFiles, n := clean.Snapshot(), testutil.CacheFiles(t, cleanStore), len(clean.Calls())
	require.GreaterOrEqual(t, n, max(sc.MinCalls, 1), "mutating calls of a clean run: %v", clean.Calls())
	for _, keep := range []bool{false, true} {
		for i := 1; i <= n; i++ {
			f, s := sc.Pod(), testutil.NewStore(t)
			f.FailAt(i, injected)
			err := sc.run(ctx, vmi, f, s, phase1.Options{KeepOnFailure: keep})
			require.ErrorIs(t, err, injected, "call %d (%s)", i, clean.Calls()[i-1])
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, phase1.StepPrepare, pe.Step)
			f.FailAt(0, nil)
			require.NoError(t, sc.run(ctx, vmi, f, s, phase1.Options{}), "re-run after failing call %d", i)
			require.Equal(t, want, f.Snapshot(), "keep=%v: state after failing call %d (%s)", keep, i, clean.Calls()[i-1])
			require.Equal(t, wantFiles, testutil.CacheFiles(t, s), "keep=%v: caches after failing call %d", keep, i)
		}
	}
}

// RollbackLeavesCNIState: a failed run that rolls back leaves the
// namespace as the CNI left it (sysctls aside: phase1 leaves those).
func RollbackLeavesCNIState(t *testing.T, sc Scenario) {
	vmi := testutil.LoadVMI(t, sc.VMI)
	ctx := context.Background()
	pristine := sc.Pod().Snapshot()
	for i := 1; ; i++ {
		f, s := sc.Pod(), testutil.NewStore(t)
		f.FailAt(i, errors.New("injected"))
		if sc.run(ctx, vmi, f, s, phase1.Options{}) == nil {
			require.Greater(t, i, 1, "no mutating call to fail")
			break
		}
		got := f.Snapshot()
		require.Equal(t, pristine.Links, got.Links, "after failing call %d", i)
		require.Equal(t, pristine.Addrs, got.Addrs, "after failing call %d", i)
		require.Equal(t, pristine.Routes, got.Routes, "after failing call %d", i)
		require.Empty(t, got.NAT, "after failing call %d", i)
	}
}

// Cleanup: without a run, after a run and twice, Cleanup leaves the
// namespace as the CNI left it and no records; a run after it works.
func Cleanup(t *testing.T, sc Scenario) {
	vmi := testutil.LoadVMI(t, sc.VMI)
	f, s := sc.Pod(), testutil.NewStore(t)
	pristine := f.Snapshot()
	ctx := context.Background()
	opts := phase1.Options{Driver: f, Registry: sc.Registry}
	require.NoError(t, phase1.Cleanup(ctx, vmi, "", s, opts), "cleanup without run")
	require.NoError(t, phase1.Run(ctx, vmi, "", s, opts))
	require.NoError(t, phase1.Cleanup(ctx, vmi, "", s, opts))
	got := f.Snapshot()
	require.Equal(t, pristine.Links, got.Links)
	require.Equal(t, pristine.Addrs, got.Addrs)
	require.Equal(t, pristine.Routes, got.Routes)
	require.Empty(t, got.NAT)
	require.Empty(t, testutil.CacheFiles(t, s))
	require.NoError(t, phase1.Cleanup(ctx, vmi, "", s, opts), "cleanup twice")
	require.NoError(t, phase1.Run(ctx, vmi, "", s, opts), "run after cleanup")
}
