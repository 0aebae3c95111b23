package phase1_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/binding/masquerade"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

func threeLinks() []netdrivertest.SimLink {
	return []netdrivertest.SimLink{{Name: "eth0"}, {Name: "net1"}, {Name: "net2", NoIPAM: true}}
}

// TestLaterRecordCheckedBeforeKernel: an unsafe or unreadable record of
// the VMI's last interface fails the run before the first kernel call,
// not after the earlier interfaces were set up.
func TestLaterRecordCheckedBeforeKernel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		as    any
	}{
		{"symlink", func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "elsewhere.json")
			require.NoError(t, os.WriteFile(target, []byte(`{"version":1}`), 0o644))
			require.NoError(t, os.Symlink(target, p))
		}, new(*cache.UnsafeError)},
		{"corrupt", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(`{"version":1,`), 0o644))
		}, new(*cache.CorruptError)},
		{"future version", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(`{"version":99}`), 0o644))
		}, new(*cache.VersionError)},
		{"directory", func(t *testing.T, p string) { require.NoError(t, os.Mkdir(p, 0o755)) }, new(*cache.UnsafeError)},
		{"world-writable", func(t *testing.T, p string) {
			require.NoError(t, os.WriteFile(p, []byte(`{"version":1}`), 0o644))
			require.NoError(t, os.Chmod(p, 0o666))
		}, new(*cache.UnsafeError)},
	} {
		for _, kind := range []string{"pod-interface", "interface"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				vmi := testutil.LoadVMI(t, threeVMI)
				f := netdrivertest.SimulatedPod(threeLinks()...)
				pristine := f.Snapshot()
				s := testutil.NewStore(t)
				p, err := s.ProgressPath(uid, "red")
				require.NoError(t, err)
				if kind == "interface" {
					p, err = s.InterfacePath(uid, "red")
					require.NoError(t, err)
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				tc.setup(t, p)

				err = run(t, vmi, f, s, phase1.Options{})
				var pe *phase1.Error
				require.ErrorAs(t, err, &pe)
				require.Equal(t, phase1.StepRead, pe.Step)
				require.Equal(t, "red", pe.Interface)
				require.ErrorAs(t, err, tc.as)
				require.Empty(t, f.Calls(), "no kernel change before every record was checked")
				require.Equal(t, pristine, f.Snapshot())
				_, err = s.ReadProgress(uid, "default")
				require.ErrorIs(t, err, cache.ErrNotExist, "no record of an earlier interface was written")
			})
		}
	}
}

// failNth returns s with a hook that fails the nth write (from 1) of the
// record file named base at step with err.
func failNth(s *cache.Store, base string, n int, step cache.WriteStep, err error) *cache.Store {
	seen := 0
	return s.WithHook(func(st cache.WriteStep, tmp, path string) error {
		if filepath.Base(path) != base {
			return nil
		}
		if st == cache.WriteTempCreated {
			seen++
		}
		if st == step && seen == n {
			return err
		}
		return nil
	})
}

// TestFinishedWriteFailureRollsBack: a full disk when the "finished"
// records are written undoes every interface, the one whose record failed
// included, and removes their records: the VMI gets all or none.
func TestFinishedWriteFailureRollsBack(t *testing.T) {
	for _, iface := range []string{"default", "blue", "red"} {
		t.Run(iface, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, threeVMI)
			f := netdrivertest.SimulatedPod(threeLinks()...)
			pristine := f.Snapshot()
			s := testutil.NewStore(t)
			// The second write of the progress record is "finished".
			hooked := failNth(s, "pod-interface-"+iface+".json", 2, cache.WriteTempWritten, syscall.ENOSPC)
			err := run(t, vmi, f, hooked, phase1.Options{})
			require.ErrorIs(t, err, syscall.ENOSPC)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, phase1.StepRecord, pe.Step)
			require.Equal(t, iface, pe.Interface)
			got := f.Snapshot()
			require.Equal(t, pristine.Links, got.Links, "every interface rolled back")
			require.Equal(t, pristine.Addrs, got.Addrs)
			require.Equal(t, pristine.Routes, got.Routes)
			require.Empty(t, got.NAT)
			for _, name := range []string{"default", "blue", "red"} {
				_, err := s.ReadProgress(uid, name)
				require.ErrorIs(t, err, cache.ErrNotExist, name)
			}
			require.NoError(t, run(t, vmi, f, s, phase1.Options{}), "a re-run with space converges")
		})
	}
}

// TestStaleTempFilesRemoved: temporary files a killed write left beside
// the VMI's records are removed at the start of the next run.
func TestStaleTempFilesRemoved(t *testing.T) {
	vmi := testutil.LoadVMI(t, bridgeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	s := testutil.NewStore(t)
	p, err := s.ProgressPath(uid, "default")
	require.NoError(t, err)
	dir := filepath.Dir(p)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range []string{".tmp-pod-interface-default.json-123", ".tmp-interface-default.json-456"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(`{"vers`), 0o600))
	}
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		require.False(t, strings.HasPrefix(e.Name(), ".tmp-"), "stale %s left", e.Name())
	}
	require.Len(t, ents, 2)
}

// TestLockHeld: while another run holds the VMI's lock, Run and Cleanup
// wait as long as the context or Options.LockWait allow, then fail with
// an error matching phase1.ErrLocked that names the lock, before any
// kernel call; once the lock is free, a waiting Run proceeds.
func TestLockHeld(t *testing.T) {
	vmi := testutil.LoadVMI(t, bridgeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	s := testutil.NewStore(t)
	held, err := s.LockVMI(context.Background(), uid)
	require.NoError(t, err)

	check := func(err error, cause error) {
		t.Helper()
		require.ErrorIs(t, err, phase1.ErrLocked)
		require.ErrorIs(t, err, cause)
		var pe *phase1.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, phase1.StepLock, pe.Step)
		require.Contains(t, err.Error(), "another phase1 run")
		require.Contains(t, err.Error(), ".lock-"+uid)
		require.Empty(t, f.Calls())
	}
	check(run(t, vmi, f, s, phase1.Options{LockWait: -1}), context.Canceled)
	check(run(t, vmi, f, s, phase1.Options{LockWait: 10 * time.Millisecond}), context.DeadlineExceeded)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check(phase1.Run(ctx, vmi, "", s, phase1.Options{Driver: f}), context.Canceled)
	check(phase1.Cleanup(ctx, vmi, "", s, phase1.Options{Driver: f}), context.Canceled)

	done := make(chan error, 1)
	go func() { done <- run(t, vmi, f, s, phase1.Options{}) }()
	select {
	case err := <-done:
		t.Fatalf("Run did not wait for the lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.Empty(t, f.Calls(), "nothing done while the lock is held")
	require.NoError(t, held.Unlock())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute): // a watchdog, not a timing assertion
		t.Fatal("Run still waits after the lock was released")
	}
}

// TestRunRacesCleanup: Runs and Cleanups of one VMI started together on
// one namespace never interleave: each ends with nil, and the namespace
// and the records agree afterwards (all set up and finished, or pristine
// with no records).
func TestRunRacesCleanup(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	for try := range 20 {
		f := netdrivertest.SimulatedPod(threeLinks()...)
		pristine := f.Snapshot()
		s := testutil.NewStore(t)
		errs := make(chan error, 4)
		for i := range 4 {
			go func() {
				opts := phase1.Options{Driver: f}
				if (i+try)%2 == 0 {
					errs <- phase1.Run(context.Background(), vmi, "", s, opts)
				} else {
					errs <- phase1.Cleanup(context.Background(), vmi, "", s, opts)
				}
			}()
		}
		for range 4 {
			require.NoError(t, <-errs)
		}
		pod, err := s.ReadProgress(uid, "red")
		if errors.Is(err, cache.ErrNotExist) {
			got := f.Snapshot()
			require.Equal(t, pristine.Links, got.Links, "try %d: no records, so pristine", try)
			require.Empty(t, got.NAT)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, cache.Finished, pod.State)
		ref := netdrivertest.SimulatedPod(threeLinks()...)
		require.NoError(t, run(t, vmi, ref, testutil.NewStore(t), phase1.Options{}))
		require.Equal(t, ref.Snapshot().Links, f.Snapshot().Links, "try %d: records say finished, so all set up", try)
	}
}

// TestMasqueradeNetworkOverlapsPod: a VM network that overlaps the pod's
// address or one of its routes (the default 10.0.2.0/24 on a pod whose IP
// lies in it, as on AWS VPC CNI pods; the pod's own subnet; a covering
// prefix) is refused at plan, before any change.
func TestMasqueradeNetworkOverlapsPod(t *testing.T) {
	for _, tc := range []struct {
		name, cidr, podAddr, route string
		field, conflict            string
	}{
		{name: "default network holds the pod IP", podAddr: "10.0.2.15/32", field: "vmNetworkCIDR", conflict: "10.0.2.15/32"},
		{name: "pod subnet", cidr: "10.244.1.0/24", podAddr: "10.244.1.7/24", field: "vmNetworkCIDR", conflict: "10.244.1.7/24"},
		{name: "covering prefix", cidr: "10.244.0.0/16", podAddr: "10.244.1.7/24", field: "vmNetworkCIDR", conflict: "10.244.1.7/24"},
		{name: "route to other pods", cidr: "10.96.0.0/24", podAddr: "10.244.1.7/24", route: "10.96.0.0/12", field: "vmNetworkCIDR", conflict: "10.96.0.0/12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := masqueradeVMI
			if tc.cidr != "" {
				yaml = strings.Replace(yaml, "pod: {}", "pod: {vmNetworkCIDR: "+tc.cidr+"}", 1)
			}
			vmi := testutil.LoadVMI(t, yaml)
			f := netdrivertest.NewFake()
			pl := netdrivertest.PodLink{Name: "eth0", MTU: 1500, Addresses: []netip.Prefix{netip.MustParsePrefix(tc.podAddr)},
				Routes: []netdriver.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("169.254.1.1")}}}
			if tc.route != "" {
				pl.Routes = append(pl.Routes, netdriver.Route{Dst: netip.MustParsePrefix(tc.route), Gateway: netip.MustParseAddr("169.254.1.1")})
			}
			f.SeedPodLink(pl)
			before := f.Snapshot()
			s := testutil.NewStore(t)
			err := run(t, vmi, f, s, phase1.Options{})
			var oe *masquerade.OverlapError
			require.ErrorAs(t, err, &oe)
			require.Equal(t, tc.field, oe.Field)
			require.Equal(t, tc.conflict, oe.Conflict)
			var pe *phase1.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, phase1.StepPlan, pe.Step)
			require.Empty(t, f.Calls())
			require.Equal(t, before, f.Snapshot())
			_, err = s.ReadProgress(uid, "default")
			require.ErrorIs(t, err, cache.ErrNotExist)
		})
	}
}

// TestRunSyncsBeforeReturn: every record a run writes is fsynced before it
// is renamed into place, and the VMI's directory is synced once, after the
// last rename and before Run returns; a re-run that changes nothing
// writes nothing (no fsync at all).
func TestRunSyncsBeforeReturn(t *testing.T) {
	vmi := testutil.LoadVMI(t, threeVMI)
	f := netdrivertest.SimulatedPod(threeLinks()...)
	var steps []cache.WriteStep
	s := testutil.NewStore(t).WithHook(func(st cache.WriteStep, tmp, path string) error {
		steps = append(steps, st)
		return nil
	})
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	require.NotEmpty(t, steps)
	require.Equal(t, cache.WriteDirSynced, steps[len(steps)-1], "the directory is synced last")
	renames, syncs := 0, 0
	for i, st := range steps {
		switch st {
		case cache.WriteRenamed:
			renames++
			require.Equal(t, cache.WriteTempSynced, steps[i-1], "fsync before rename")
		case cache.WriteDirSynced:
			syncs++
		}
	}
	require.Equal(t, 9, renames, "three records per interface")
	require.Equal(t, 1, syncs, "one directory sync per run")

	steps = nil
	require.NoError(t, run(t, vmi, f, s, phase1.Options{}))
	require.Empty(t, steps, "an unchanged run writes and syncs nothing")
}
