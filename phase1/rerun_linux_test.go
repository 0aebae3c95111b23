//go:build linux

package phase1_test

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// twoOfThreeVMI is threeVMI without its last interface (red): the VMI
// before red was added.
var twoOfThreeVMI = strings.Replace(strings.Replace(threeVMI,
	"      - {name: red, bridge: {}}\n", "", 1),
	"  - {name: red, multus: {networkName: red-net}}\n", "", 1)

// faultAt fails call n (from 1, reads and mutating calls counted
// together, as netlink sends are) of a run through d: with ENOBUFS, or by
// cancelling the run's context (cancel) and failing the call with
// context.Canceled.
func faultAt(d *intercept.Driver, n int, cancel context.CancelFunc) (hit *bool) {
	seen := 0
	hit = new(bool)
	d.Before = func(intercept.Call) error {
		seen++
		if seen != n {
			return nil
		}
		*hit = true
		if cancel != nil {
			cancel()
			return context.Canceled
		}
		return syscall.ENOBUFS
	}
	return hit
}

// TestRerunFailureKeepsFinished: a Run on a VMI an earlier Run finished,
// failed by ENOBUFS at each kernel call in turn or cancelled at each call
// in turn, leaves the finished interfaces' kernel state and records
// byte-identical (it never rolls back an earlier run's interfaces); and
// when the VMI gained an interface since (red), the failed run undoes red
// alone, so that a re-run adds it.
func TestRerunFailureKeepsFinished(t *testing.T) {
	for _, tc := range []struct {
		name, before, after string
		// added is the interface the second VMI adds ("" for none).
		added string
	}{
		{name: "same VMI", before: threeVMI, after: threeVMI},
		{name: "interface added", before: twoOfThreeVMI, after: threeVMI, added: "red"},
	} {
		for _, how := range []string{"ENOBUFS", "cancel"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				f := netdrivertest.SimulatedPod(threeLinks()...)
				s := testutil.NewStore(t)
				require.NoError(t, run(t, testutil.LoadVMI(t, tc.before), f, s, phase1.Options{}))
				wantKernel, wantFiles := f.Snapshot(), recordsOnly(testutil.CacheFiles(t, s))

				// A clean second run, to count its calls.
				d := &intercept.Driver{Inner: netdrivertest.SimulatedPod(threeLinks()...)}
				ref := testutil.NewStore(t)
				require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, tc.before), "", ref, phase1.Options{Driver: d}))
				r0, m0 := d.Counts()
				require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, tc.after), "", ref, phase1.Options{Driver: d}))
				r1, m1 := d.Counts()
				pristineRed := linkState(wantKernel, redLinks...)
				pluggedRed := linkState(d.Inner.(*netdrivertest.Fake).Snapshot(), redLinks...)
				calls := r1 + m1 - r0 - m0
				require.Greater(t, calls, 3, "calls of the second run")
				t.Logf("the second run makes %d calls, each failed in turn", calls)

				for n := 1; n <= calls; n++ {
					fd := &intercept.Driver{Inner: f}
					ctx, cancel := context.WithCancel(context.Background())
					var hit *bool
					if how == "cancel" {
						hit = faultAt(fd, n, cancel)
					} else {
						hit = faultAt(fd, n, nil)
					}
					err := phase1.Run(ctx, testutil.LoadVMI(t, tc.after), "", s, phase1.Options{Driver: fd})
					cancel()
					require.True(t, *hit, "call %d was made", n)
					require.Error(t, err, "call %d failed", n)
					got := f.Snapshot()
					if tc.added == "" {
						require.Equal(t, wantKernel, got, "fault at call %d (%v): the earlier run's interfaces are untouched", n, err)
						require.Equal(t, wantFiles, recordsOnly(testutil.CacheFiles(t, s)), "fault at call %d: records byte-identical", n)
						continue
					}
					require.Equal(t, othersOf(wantKernel, redLinks...), othersOf(got, redLinks...), "fault at call %d (%v): the earlier run's interfaces are untouched", n, err)
					require.Equal(t, othersRecords(wantFiles, "red"), othersRecords(testutil.CacheFiles(t, s), "red"), "fault at call %d: their records byte-identical", n)
					// red's plug stands alone: undone if it failed, done if
					// the failure was another interface's re-check. The next
					// call's fault starts again from the earlier run.
					requireRedAllOrNone(t, f, s, err, pristineRed, pluggedRed, n)
					f = netdrivertest.SimulatedPod(threeLinks()...)
					s = testutil.NewStore(t)
					require.NoError(t, run(t, testutil.LoadVMI(t, tc.before), f, s, phase1.Options{}))
				}
				require.NoError(t, run(t, testutil.LoadVMI(t, tc.after), f, s, phase1.Options{}), "a re-run converges")
				if tc.added != "" {
					pod, err := s.ReadProgress(uid, tc.added)
					require.NoError(t, err)
					require.Equal(t, cache.Finished, pod.State)
				}
			})
		}
	}
}

// recordsOnly drops the lock files from a cache snapshot.
func recordsOnly(files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if !strings.HasPrefix(k, ".lock-") {
			out[k] = v
		}
	}
	return out
}
