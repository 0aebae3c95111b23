//go:build linux

package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// linkState is kernelState without the sysctls, which Cleanup leaves as
// Run set them: what "pristine" means after a Cleanup.
func linkState(tb testing.TB, nsPath string) []string {
	var out []string
	for _, l := range kernelState(tb, nsPath) {
		if !strings.HasPrefix(l, "sysctl ") {
			out = append(out, l)
		}
	}
	return out
}

// writeSteps is the number of cache write steps of a clean run.
func writeSteps(t *testing.T, sc scenario) int {
	t.Helper()
	pod := newPod(t, sc.pod)
	n := 0
	s := testutil.NewStore(t).WithHook(func(cache.WriteStep, string, string) error { n++; return nil })
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, sc.yaml), pod.Pod.Path, s, phase1.Options{}))
	return n
}

// recordsParse checks that every record under the store's root parses
// (temporary files aside) and returns the temporary files it saw.
func recordsParse(t *testing.T, s *cache.Store) (temps []string) {
	t.Helper()
	err := filepath.WalkDir(s.Root(), func(p string, de os.DirEntry, err error) error {
		if os.IsNotExist(err) && p == s.Root() {
			return filepath.SkipDir
		}
		if err != nil || de.IsDir() {
			return err
		}
		base := filepath.Base(p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(base, ".tmp-"):
			temps = append(temps, base)
		case strings.HasPrefix(base, ".lock-"):
		case strings.HasPrefix(base, "pod-interface-"):
			require.NoError(t, cache.Decode(p, b, &cache.Progress{}), "torn record %s", p)
		case strings.HasPrefix(base, "interface-"):
			require.NoError(t, cache.Decode(p, b, &cache.Interface{}), "torn record %s", p)
		case base == cache.NamespaceFile:
			require.NoError(t, cache.Decode(p, b, &cache.Namespace{}), "torn record %s", p)
		default:
			t.Errorf("stray file %s", p)
		}
		return nil
	})
	require.NoError(t, err)
	return temps
}

// TestSIGKILLInsideCacheWrites kills a phase1 process at every step of
// every cache write (temporary file created, written, synced, renamed).
// Whatever the kill left, every record parses; then, in turn, either a
// re-run converges to the kernel state and cache bytes of a clean run
// with no temporary file left, or Cleanup returns the namespace to how
// the CNI left it with no file left.
func TestSIGKILLInsideCacheWrites(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range kernelScenarios {
		t.Run(sc.name, func(t *testing.T) {
			wantState, wantFiles, _ := cleanRun(t, sc)
			n := writeSteps(t, sc)
			require.GreaterOrEqual(t, n, 12, "three records, four steps each")
			var leftTemps int
			for at := 1; at <= n; at++ {
				t.Run(fmt.Sprintf("step-%d", at), func(t *testing.T) {
					pod := newPod(t, sc.pod)
					pristine := linkState(t, pod.Pod.Path)
					s := testutil.NewStore(t)
					cmd := exec.Command(os.Args[0], "-test.run=^$")
					cmd.Env = append(os.Environ(),
						envHelper+"=kill", envNetNS+"="+pod.Pod.Path, envCache+"="+s.Root(),
						envVMI+"="+sc.yaml, envKillAt+fmt.Sprint("=", at), envKillWhy+"=write")
					out, err := cmd.CombinedOutput()
					var ee *exec.ExitError
					require.ErrorAs(t, err, &ee, "helper output: %s", out)
					ws := ee.Sys().(syscall.WaitStatus)
					require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the helper must die by SIGKILL, got %v: %s", ee, out)
					if len(recordsParse(t, s)) > 0 {
						leftTemps++
					}
					vmi := testutil.LoadVMI(t, sc.yaml)
					if at%2 == 1 {
						require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
						require.Equal(t, wantState, kernelState(t, pod.Pod.Path))
						require.Equal(t, wantFiles, cacheFiles(t, s), "converged, no temporary file left")
						return
					}
					require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
					require.Equal(t, pristine, linkState(t, pod.Pod.Path), "Cleanup after the kill: as the CNI left it")
					require.Empty(t, cacheFiles(t, s))
				})
			}
			require.Positive(t, leftTemps, "some kills must leave a temporary file for the re-run to remove")
		})
	}
}

// TestTwoRunsAtOnce starts two phase1 runs of one VMI on one namespace at
// the same time, again and again: the VMI and namespace locks serialise
// them, so both succeed and the result is a clean run's, kernel and cache.
func TestTwoRunsAtOnce(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range kernelScenarios {
		t.Run(sc.name, func(t *testing.T) {
			wantState, wantFiles, _ := cleanRun(t, sc)
			for try := range 10 {
				pod := newPod(t, sc.pod)
				s := testutil.NewStore(t)
				errs := make(chan error, 2)
				for range 2 {
					go func() {
						vmi, err := loadVMIErr(sc.yaml)
						if err == nil {
							err = phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{})
						}
						errs <- err
					}()
				}
				require.NoError(t, <-errs, "try %d", try)
				require.NoError(t, <-errs, "try %d", try)
				require.Equal(t, wantState, kernelState(t, pod.Pod.Path), "try %d", try)
				require.Equal(t, wantFiles, cacheFiles(t, s), "try %d", try)
			}
		})
	}
}

// TestRunRacesCleanupKernel starts a Run and a Cleanup of one VMI on one
// namespace at the same time, again and again: both succeed and never
// interleave, so afterwards the namespace and the records agree (a clean
// run's state with its records, or the CNI's with none), and a further
// Run converges.
func TestRunRacesCleanupKernel(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range kernelScenarios {
		t.Run(sc.name, func(t *testing.T) {
			wantState, wantFiles, _ := cleanRun(t, sc)
			var ran, cleaned int
			for try := range 20 {
				pod := newPod(t, sc.pod)
				pristine := linkState(t, pod.Pod.Path)
				s := testutil.NewStore(t)
				vmi := testutil.LoadVMI(t, sc.yaml)
				if try%2 == 1 {
					// Half the tries race a Cleanup against a re-run.
					require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
				}
				errs := make(chan error, 2)
				go func() { errs <- phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}) }()
				go func() { errs <- phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}) }()
				require.NoError(t, <-errs, "try %d", try)
				require.NoError(t, <-errs, "try %d", try)
				if _, err := s.ReadProgress(uid, "default"); errors.Is(err, cache.ErrNotExist) {
					cleaned++
					require.Equal(t, pristine, linkState(t, pod.Pod.Path), "try %d: no records, so as the CNI left it", try)
					require.Empty(t, cacheFiles(t, s), "try %d", try)
				} else {
					ran++
					require.NoError(t, err)
					require.Equal(t, wantState, kernelState(t, pod.Pod.Path), "try %d: records, so set up", try)
					require.Equal(t, wantFiles, cacheFiles(t, s), "try %d", try)
				}
				require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
				require.Equal(t, wantState, kernelState(t, pod.Pod.Path), "try %d: a further run converges", try)
			}
			t.Logf("%d tries ended set up, %d cleaned up", ran, cleaned)
		})
	}
}
