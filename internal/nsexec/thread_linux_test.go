package nsexec_test

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/testrig/testutil"
)

func ino(st os.FileInfo) uint64 { return st.Sys().(*syscall.Stat_t).Ino }

// nsIno is the inode of a namespace file: equal inodes, same namespace.
func nsIno(tb testing.TB, path string) uint64 {
	tb.Helper()
	st, err := os.Stat(path)
	require.NoError(tb, err)
	return ino(st)
}

// threadsIn counts this process's threads in the namespace of inode want.
func threadsIn(tb testing.TB, want uint64) int {
	tb.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	require.NoError(tb, err)
	n := 0
	for _, t := range tasks {
		if st, err := os.Stat(t); err == nil && ino(st) == want {
			n++
		}
	}
	return n
}

func TestThreadRunsInNamespace(t *testing.T) {
	ns := testutil.NewNS(t, "vn-thr")
	want := nsIno(t, ns.Path)
	home := nsIno(t, "/proc/self/ns/net")
	require.NotEqual(t, home, want)
	th, err := nsexec.Start(ns.Path)
	require.NoError(t, err)
	defer th.Close()

	// Calls from several goroutines at once all run inside; goroutines
	// around them never find themselves there.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 20 {
				errs <- th.Do(func() error {
					st, err := os.Stat("/proc/thread-self/ns/net")
					if err == nil && ino(st) != want {
						t.Errorf("Do ran in namespace %d, want %d", ino(st), want)
					}
					return err
				})
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				st, err := os.Stat("/proc/thread-self/ns/net")
				if err == nil && ino(st) == want {
					t.Errorf("a goroutine outside Do ran in the thread's namespace")
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	go func() { wg.Wait(); close(errs) }()
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, home, nsIno(t, "/proc/thread-self/ns/net"))
	require.Equal(t, 1, threadsIn(t, want), "one thread of the process is in the namespace")
}

func TestThreadCloseDiscardsTheThread(t *testing.T) {
	ns := testutil.NewNS(t, "vn-thr")
	want := nsIno(t, ns.Path)
	th, err := nsexec.Start(ns.Path)
	require.NoError(t, err)
	require.NoError(t, th.Do(func() error { return nil }))
	th.Close()
	th.Close() // twice is fine
	require.ErrorIs(t, th.Do(func() error { return nil }), nsexec.ErrClosed)
	// The runtime ends the locked thread once its goroutine returns
	// (bounded wait: it happens on the goroutine's exit path, which a
	// loaded machine may not schedule for a while).
	left := -1
	for range 2000 {
		if left = threadsIn(t, want); left == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.Zero(t, left, "a thread of the process is still in the namespace after Close")
}

// TestThreadMainThreadGoesHome: threads come and go many times; the
// runtime sometimes runs a thread's goroutine on the process's main thread,
// which it parks for good rather than ending. That thread must not stay in
// the namespace (keeping it alive, and /proc/self/ns/net naming it).
func TestThreadMainThreadGoesHome(t *testing.T) {
	ns := testutil.NewNS(t, "vn-thr")
	want := nsIno(t, ns.Path)
	home := nsIno(t, "/proc/thread-self/ns/net")
	for range 64 {
		th, err := nsexec.Start(ns.Path)
		require.NoError(t, err)
		require.NoError(t, th.Do(func() error { return nil }))
		th.Close()
	}
	left := -1
	for range 2000 {
		if left = threadsIn(t, want); left == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.Zero(t, left, "threads of the process still in the namespace")
	require.Equal(t, home, nsIno(t, "/proc/self/ns/net"), "the main thread is home")
}

// TestNeverOnMainThread: while threads and one-shot calls sit in a
// namespace, none runs on the process's main thread, so /proc/self/ns/net
// keeps naming the process's own namespace (a caller that opens it as
// "here" would otherwise get the pod's). Before goLocked, a Thread landed
// on the main thread in most runs of 32.
func TestNeverOnMainThread(t *testing.T) {
	ns := testutil.NewNS(t, "vn-thr")
	home := nsIno(t, "/proc/thread-self/ns/net")
	pid := unix.Getpid()
	for range 32 {
		th, err := nsexec.Start(ns.Path)
		require.NoError(t, err)
		t.Cleanup(th.Close)
		var tid int
		require.NoError(t, th.Do(func() error { tid = unix.Gettid(); return nil }))
		require.NotEqual(t, pid, tid, "a Thread runs on the main thread")
		require.NoError(t, nsexec.Do(ns.Path, func() error {
			tid = unix.Gettid()
			return nil
		}))
		require.NotEqual(t, pid, tid, "Do runs on the main thread")
		require.Equal(t, home, nsIno(t, "/proc/self/ns/net"), "/proc/self/ns/net names the process's namespace")
	}
}

func TestThreadStartErrors(t *testing.T) {
	testutil.RequireRoot(t)
	_, err := nsexec.Start(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
	// A namespace file of another kind: setns(CLONE_NEWNET) refuses it,
	// and the thread that tried is discarded.
	_, err = nsexec.Start("/proc/self/ns/uts")
	require.ErrorContains(t, err, "enter network namespace /proc/self/ns/uts")
}
