//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"

	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// cleanRun runs phase1 once in a fresh pod and returns the kernel state,
// the cache files and the number of mutating kernel calls it made.
func cleanRun(t *testing.T, sc scenario) (state []string, files map[string]string, mutating int) {
	t.Helper()
	pod := sc.newPod(t)
	s := testutil.NewStore(t)
	nl, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	defer nl.Close()
	d := &intercept.Driver{Inner: nl}
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, sc.yaml), pod.Pod.Path, s, phase1.Options{Driver: d}))
	_, mutating = d.Counts()
	return kernelState(t, pod.Pod.Path), cacheFiles(t, s), mutating
}

// TestSIGKILLAtEveryStep kills a phase1 process (this test binary
// re-executed) with SIGKILL before its first mutating kernel call and
// after each one in turn. Whatever the kill left, every cache file parses
// (absent, old or new, never torn), and a re-run converges to the kernel
// state and cache bytes of a clean run; and each kill is made a second
// time and followed by a Cleanup, which must return the namespace to how
// the CNI left it (links phase1 created but was killed before marking
// included). It runs killScenarios: masquerade, bridge (no IPAM) and
// passt.
func TestSIGKILLAtEveryStep(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range killScenarios {
		t.Run(sc.name, func(t *testing.T) { sigkillAtEveryStep(t, sc) })
	}
}

// TestSIGKILLAtEveryStepMacvtap is TestSIGKILLAtEveryStep for the macvtap
// binding, inside the kernel VM when this kernel has no macvtap (its
// pods are made by the macvtap CNI plugin on a dummy lower device).
func TestSIGKILLAtEveryStepMacvtap(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test; the same kill scenarios run under -race on this kernel in TestSIGKILLAtEveryStep")
	// nf_tables: kernelState lists virtnet's NAT tables (none here).
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "macvtap"}, Modules: []string{"nf_tables"}}) {
		return
	}
	testutil.RequireRoot(t)
	sigkillAtEveryStep(t, macvtapScenario)
}

func sigkillAtEveryStep(t *testing.T, sc scenario) {
	wantState, wantFiles, n := cleanRun(t, sc)
	minCalls := sc.minCalls
	if minCalls == 0 {
		minCalls = 4
	}
	require.GreaterOrEqual(t, n, minCalls, "mutating calls of a clean run")
	type kill struct {
		when string
		at   int
	}
	kills := []kill{{"before", 1}}
	for i := 1; i <= n; i++ {
		kills = append(kills, kill{"after", i})
	}
	for _, k := range kills {
		for _, then := range []string{"rerun", "cleanup"} {
			t.Run(fmt.Sprintf("%s-call-%d-%s", k.when, k.at, then), func(t *testing.T) {
				pod := sc.newPod(t)
				pristine := linkState(t, pod.Pod.Path)
				s := testutil.NewStore(t)
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(),
					envHelper+"=kill", envNetNS+"="+pod.Pod.Path, envCache+"="+s.Root(),
					envVMI+"="+sc.yaml, envKillAt+fmt.Sprint("=", k.at), envKillWhy+"="+k.when)
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "helper output: %s", out)
				ws := ee.Sys().(syscall.WaitStatus)
				require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL,
					"the helper must die by SIGKILL, got %v: %s", ee, out)

				cacheFiles(t, s) // every file left parses
				if then == "cleanup" {
					require.NoError(t, phase1.Cleanup(context.Background(), testutil.LoadVMI(t, sc.yaml), pod.Pod.Path, s, phase1.Options{}))
					require.Equal(t, pristine, linkState(t, pod.Pod.Path), "Cleanup after the kill: as the CNI left it")
					require.Empty(t, cacheFiles(t, s))
				}
				require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, sc.yaml), pod.Pod.Path, s, phase1.Options{}))
				require.Equal(t, wantState, kernelState(t, pod.Pod.Path))
				require.Equal(t, wantFiles, cacheFiles(t, s))
			})
		}
	}
}

// TestNamespaceVanishes deletes the pod namespace's name while phase1
// runs, before each mutating call in turn. The driver works through what
// it opened (the namespace's file, netlink and netfilter sockets, a thread
// inside the namespace) and never reopens the path, so phase1 finishes as
// a clean run does: no error, the same kernel state and cache files;
// never a panic or a hang.
func TestNamespaceVanishes(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range kernelScenarios {
		t.Run(sc.name, func(t *testing.T) {
			wantState, wantFiles, n := cleanRun(t, sc)
			for at := 1; at <= n; at++ {
				pod := newPod(t, sc.pod)
				// Keeps the namespace reachable for the checks after
				// its name is gone.
				keep, err := os.Open(pod.Pod.Path)
				require.NoError(t, err)
				nl, err := kernel.Open(pod.Pod.Path)
				require.NoError(t, err)
				d := &intercept.Driver{Inner: nl, Before: func(c intercept.Call) error {
					if c.Mutating && c.Seq == at {
						return netns.DeleteNamed(pod.Pod.Name)
					}
					return nil
				}}
				s := testutil.NewStore(t)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- phase1.Run(ctx, testutil.LoadVMI(t, sc.yaml), pod.Pod.Path, s, phase1.Options{Driver: d})
				}()
				// A watchdog, not a timing assertion: a hang fails here
				// instead of at the package's -timeout.
				var runErr error
				select {
				case runErr = <-done:
				case <-time.After(time.Minute):
					t.Fatalf("phase1 hangs after the namespace was deleted before call %d", at)
				}
				cancel()
				nl.Close()
				require.NoError(t, runErr, "namespace deleted before mutating call %d", at)
				_, err = os.Stat(pod.Pod.Path)
				require.ErrorIs(t, err, fs.ErrNotExist, "call %d: the namespace's name is gone", at)
				require.Equal(t, wantState, kernelState(t, fmt.Sprintf("/proc/self/fd/%d", keep.Fd())), "call %d", at)
				require.Equal(t, wantFiles, cacheFiles(t, s), "call %d", at)
				require.NoError(t, keep.Close())
			}
		})
	}
}
