//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// attachTap opens the tap as QEMU does (/dev/net/tun in the pod's
// namespace, TUNSETIFF) and returns the queue's file descriptor, closed
// when the test ends.
func attachTap(t *testing.T, pod *testutil.NS, name string) int {
	t.Helper()
	fd := -1
	require.NoError(t, pod.Do(func() error {
		var err error
		if fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
			return err
		}
		req, err := unix.NewIfreq(name)
		if err != nil {
			return err
		}
		req.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI | unix.IFF_VNET_HDR | unix.IFF_ONE_QUEUE)
		return unix.IoctlIfreq(fd, unix.TUNSETIFF, req)
	}), "attach to tap %s", name)
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// tapAttached reports whether the queue fd still has its device (QEMU's
// "File descriptor in bad state", EBADFD, once the tap was deleted).
func tapAttached(fd int) error {
	req, err := unix.NewIfreq("")
	if err != nil {
		return err
	}
	return unix.IoctlIfreq(fd, unix.TUNGETIFF, req)
}

// ifindexes maps each link of the namespace to its index: a link deleted
// and made again under its name gets another.
func ifindexes(t *testing.T, pod *testutil.NS) map[string]int {
	t.Helper()
	ls, err := pod.Handle.LinkList()
	require.NoError(t, err)
	out := map[string]int{}
	for _, l := range ls {
		out[l.Attrs().Name] = l.Attrs().Index
	}
	return out
}

// TestRerunFaultKeepsRunningVM: on this kernel, phase1 runs once for a VM
// (masquerade; bridge without IPAM) and a QEMU-like process attaches to
// its tap; then phase1 runs again with ENOBUFS injected at each kernel
// call in turn (reads included: each is a netlink send), and again
// cancelled at each call in turn. Each failed re-run leaves the kernel
// state (kernelState and every link's ifindex) and the records
// byte-identical, and the tap's queue attached; a last clean run changes
// nothing either.
func TestRerunFaultKeepsRunningVM(t *testing.T) {
	testutil.RequireRoot(t)
	for _, sc := range kernelScenarios {
		t.Run(sc.name, func(t *testing.T) {
			pod := sc.newPod(t)
			s := testutil.NewStore(t)
			vmi := testutil.LoadVMI(t, sc.yaml)
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
			fd := attachTap(t, pod.Pod, names.Tap(pod.PodLink, pod.PodLink == "eth0"))
			wantState, wantFiles, wantIdx := kernelState(t, pod.Pod.Path), cacheFiles(t, s), ifindexes(t, pod.Pod)

			nl, err := kernel.Open(pod.Pod.Path)
			require.NoError(t, err)
			t.Cleanup(func() { nl.Close() })
			count := &intercept.Driver{Inner: nl}
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{Driver: count}))
			r, m := count.Counts()
			calls := r + m
			require.GreaterOrEqual(t, calls, 4, "kernel calls of a re-run")
			t.Logf("a re-run makes %d kernel calls, each failed in turn (ENOBUFS, then cancellation)", calls)

			for _, how := range []string{"ENOBUFS", "cancel"} {
				for n := 1; n <= calls; n++ {
					ctx, cancel := context.WithCancel(context.Background())
					seen, hit := 0, false
					d := &intercept.Driver{Inner: nl, Before: func(intercept.Call) error {
						if seen++; seen != n {
							return nil
						}
						hit = true
						if how == "cancel" {
							cancel()
							return context.Canceled
						}
						return syscall.ENOBUFS
					}}
					err := phase1.Run(ctx, vmi, pod.Pod.Path, s, phase1.Options{Driver: d})
					cancel()
					what := fmt.Sprintf("%s at call %d (%v)", how, n, err)
					require.True(t, hit, what)
					require.Error(t, err, what)
					require.Equal(t, wantState, kernelState(t, pod.Pod.Path), what)
					require.Equal(t, wantIdx, ifindexes(t, pod.Pod), what+": no link made again")
					require.Equal(t, wantFiles, cacheFiles(t, s), what)
					require.NoError(t, tapAttached(fd), what+": QEMU's tap queue")
				}
			}
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, s, phase1.Options{}))
			require.Equal(t, wantState, kernelState(t, pod.Pod.Path))
			require.Equal(t, wantIdx, ifindexes(t, pod.Pod))
			require.NoError(t, tapAttached(fd))
		})
	}
}
