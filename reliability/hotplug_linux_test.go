//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// runningVMI is a KubeVirt 1.x VMI (hashed pod interface names) that runs
// with masquerade on the pod network; plugVMI is the same VMI once a
// bridge interface on Multus network blue was added to it.
const (
	runningVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-plug, namespace: default, uid: ` + uid + `, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}}
  networks:
  - {name: default, pod: {}}
`
	plugVMI = `
kind: VirtualMachineInstance
metadata: {name: vmi-plug, namespace: default, uid: ` + uid + `, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue-net}}
`
)

// plugPod is a pod that runs runningVMI: eth0 (masquerade, phase1 done,
// a QEMU-like process on tap0) and blue's pod link, a veth without IPAM a
// CNI plugin added while the VM ran (its name: KubeVirt 1.x's hashed
// pod interface name). It returns the pod and that name.
func plugPod(t *testing.T) (*testutil.Pod, string) {
	t.Helper()
	pod := newPod(t, testutil.PodConfig{})
	blue := api.HashedPodInterface("blue")
	testutil.AddVeth(t, pod.Node, "veth-blue", pod.Pod, blue, 1400)
	l, err := pod.Pod.Handle.LinkByName(blue)
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.LinkSetHardwareAddr(l, net.HardwareAddr{0x0a, 0x58, 0x0a, 0xf4, 0x02, 0x07}))
	return pod, blue
}

// blueLines are the lines of a kernelState about blue's links (its pod
// link, bridge and tap).
func blueLines(state []string, blue string) (mine, others []string) {
	short := strings.TrimPrefix(blue, "pod")
	for _, l := range state {
		if strings.Contains(l, short) {
			mine = append(mine, l)
		} else {
			others = append(others, l)
		}
	}
	return mine, others
}

// TestSIGKILLDuringPlug plugs a bridge interface (blue) into a VM that
// runs with masquerade, on this kernel, in a phase1 process killed by
// SIGKILL before its first mutating kernel call and after each one in
// turn. After each kill the running interface's kernel state (every line
// of kernelState not about blue's links, and the ifindexes) and records
// are byte-identical and QEMU's tap queue still attached; a re-run
// converges to a clean plug; and an unplug (blue absent) then returns
// blue's pod link to how the CNI left it.
func TestSIGKILLDuringPlug(t *testing.T) {
	testutil.RequireRoot(t)
	// A clean plug: its end state and mutating calls.
	ref := testutil.NewStore(t)
	rpod, blue := plugPod(t)
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, runningVMI), rpod.Pod.Path, ref, phase1.Options{}))
	bluePristine, _ := blueLines(kernelState(t, rpod.Pod.Path), blue)
	nl, err := kernel.Open(rpod.Pod.Path)
	require.NoError(t, err)
	count := &intercept.Driver{Inner: nl}
	require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, plugVMI), rpod.Pod.Path, ref, phase1.Options{Driver: count}))
	nl.Close()
	_, n := count.Counts()
	require.GreaterOrEqual(t, n, 4, "mutating calls of a plug")
	wantState, wantFiles := kernelState(t, rpod.Pod.Path), cacheFiles(t, ref)
	t.Logf("a plug makes %d mutating kernel calls; killed before the first and after each", n)

	type kill struct {
		when string
		at   int
	}
	kills := []kill{{"before", 1}}
	for i := 1; i <= n; i++ {
		kills = append(kills, kill{"after", i})
	}
	for _, k := range kills {
		t.Run(fmt.Sprintf("%s-call-%d", k.when, k.at), func(t *testing.T) {
			s := testutil.NewStore(t)
			pod, _ := plugPod(t)
			require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, runningVMI), pod.Pod.Path, s, phase1.Options{}))
			fd := attachTap(t, pod.Pod, names.Tap("eth0", true))
			_, running := blueLines(kernelState(t, pod.Pod.Path), blue)
			runningIdx, runningFiles := ifindexes(t, pod.Pod), cacheFiles(t, s)

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(),
				envHelper+"=kill", envNetNS+"="+pod.Pod.Path, envCache+"="+s.Root(),
				envVMI+"="+plugVMI, envKillAt+fmt.Sprint("=", k.at), envKillWhy+"="+k.when)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "helper output: %s", out)
			ws := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the helper must die by SIGKILL, got %v: %s", ee, out)

			_, got := blueLines(kernelState(t, pod.Pod.Path), blue)
			require.Equal(t, running, got, "the running interface's kernel state")
			idx := ifindexes(t, pod.Pod)
			for name, i := range runningIdx {
				require.Equal(t, i, idx[name], "ifindex of %s: no link of the running VM made again", name)
			}
			files := cacheFiles(t, s)
			for name, b := range runningFiles {
				if !strings.Contains(name, "-blue") {
					require.Equal(t, b, files[name], "record %s of the running VM", name)
				}
			}
			require.NoError(t, tapAttached(fd), "QEMU's tap queue")

			require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, plugVMI), pod.Pod.Path, s, phase1.Options{}), "a re-run converges")
			require.Equal(t, wantState, kernelState(t, pod.Pod.Path))
			require.Equal(t, wantFiles, cacheFiles(t, s))

			unplug := strings.Replace(plugVMI, "{name: blue, bridge: {}}", "{name: blue, bridge: {}, state: absent}", 1)
			require.NoError(t, phase1.Run(context.Background(), testutil.LoadVMI(t, unplug), pod.Pod.Path, s, phase1.Options{}))
			mine, others := blueLines(kernelState(t, pod.Pod.Path), blue)
			require.Equal(t, bluePristine, mine, "unplugged: blue's pod link as the CNI left it, no bridge or tap")
			require.Equal(t, running, others)
			require.False(t, slices.ContainsFunc(mine, func(l string) bool { return strings.Contains(l, "k6t-") }))
			require.NoError(t, tapAttached(fd))
		})
	}
}
