//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// wideBridgeVMI has n bridge interfaces on Multus networks: pod links
// net1..netN.
func wideBridgeVMI(uid string, n int) string {
	y := fmt.Sprintf("kind: VirtualMachineInstance\nmetadata: {name: wide, namespace: load, uid: %s}\nspec:\n  domain:\n    devices:\n      interfaces:\n", uid)
	for i := 1; i <= n; i++ {
		y += fmt.Sprintf("      - {name: n%d, bridge: {}}\n", i)
	}
	y += "  networks:\n"
	for i := 1; i <= n; i++ {
		y += fmt.Sprintf("  - {name: n%d, multus: {networkName: net-%d}}\n", i, i)
	}
	return y
}

// TestSixtyFourInterfaces runs phase1 for one VM with 64 IPAM-less bridge
// interfaces on veths net1..net64: every one gets its bridge and tap, and
// a second run changes no cache byte.
func TestSixtyFourInterfaces(t *testing.T) {
	const n = 64
	pod := testutil.NewNS(t, "vn-pod")
	node := testutil.NewNS(t, "vn-node")
	want := []string{"lo"}
	for i := 1; i <= n; i++ {
		testutil.AddVeth(t, pod, fmt.Sprintf("net%d", i), node, fmt.Sprintf("p%d", i), 1500)
		want = append(want, fmt.Sprintf("net%d", i), fmt.Sprintf("k6t-net%d", i), fmt.Sprintf("tap%d", i))
	}
	slices.Sort(want)
	vmi := testutil.LoadVMI(t, wideBridgeVMI(uid, n))
	s := testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Path, s, phase1.Options{}))
	require.Equal(t, want, linkNames(t, pod))
	for i := 1; i <= n; i++ {
		br, err := pod.Handle.LinkByName(fmt.Sprintf("k6t-net%d", i))
		require.NoError(t, err)
		for _, port := range []string{fmt.Sprintf("net%d", i), fmt.Sprintf("tap%d", i)} {
			l, err := pod.Handle.LinkByName(port)
			require.NoError(t, err)
			require.Equal(t, br.Attrs().Index, l.Attrs().MasterIndex, "%s master k6t-net%d", port, i)
		}
	}
	files := cacheFiles(t, s)
	require.Len(t, files, 2*n)
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Path, s, phase1.Options{}))
	require.Equal(t, files, cacheFiles(t, s))
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// settled polls until f returns at most want (goroutines and threads end
// asynchronously after their work is done) and returns f's last value.
func settled(want int, f func() int) int {
	v := f()
	for i := 0; i < 100 && v > want; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		v = f()
	}
	return v
}

// TestThirtyTwoVMsAtOnce runs phase1 for 32 VMs at the same time, each in
// its own pod namespace and with its own VMI UID in one shared store, half
// masquerade and half bridge without IPAM: all succeed, each namespace
// holds exactly its own links, and no file descriptor or goroutine is
// left behind. Under -race it also checks that concurrent NAT batches
// share no state (google/nftables v0.3.0 numbers anonymous sets from an
// unsynchronized package-level counter unless the caller sets Set.ID).
func TestThirtyTwoVMsAtOnce(t *testing.T) {
	const vms = 32
	type vm struct {
		pod  *testutil.Pod
		yaml string
		want []string
	}
	list := make([]vm, vms)
	for i := range list {
		sc := kernelScenarios[i%len(kernelScenarios)]
		uid := fmt.Sprintf("7a1b2c3d-4e5f-4a6b-8c7d-%012d", i)
		list[i] = vm{pod: newPod(t, sc.pod), yaml: loadYAMLWithUID(sc.yaml, uid)}
		list[i].want = []string{"eth0", "k6t-eth0", "lo", "tap0"}
	}
	s := testutil.NewStore(t)
	fds, goroutines := openFDs(t), runtime.NumGoroutine()

	errs := make([]error, vms)
	var wg sync.WaitGroup
	for i := range list {
		wg.Go(func() {
			vmi, err := loadVMIErr(list[i].yaml)
			if err == nil {
				err = phase1.Run(context.Background(), vmi, list[i].pod.Pod.Path, s, phase1.Options{})
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "VM %d", i)
		require.Equal(t, list[i].want, linkNames(t, list[i].pod.Pod), "VM %d's namespace", i)
	}
	require.Len(t, cacheFiles(t, s), 2*vms)
	require.Equal(t, goroutines, settled(goroutines, runtime.NumGoroutine), "goroutines before and after")
	require.Equal(t, fds, settled(fds, func() int { return openFDs(t) }), "open file descriptors before and after")
}
