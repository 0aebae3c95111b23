package phase1_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestUnwritableCacheNamed: phase1 run by a process that may not write
// the cache (root's directory, run with effective uid nobody on its own
// thread, as an unprivileged launcher would) fails before any kernel
// call, naming the cache and that phase1 runs as root, permanent.
func TestUnwritableCacheNamed(t *testing.T) {
	testutil.RequireRoot(t)
	root := filepath.Join(t.TempDir(), "cache")
	require.NoError(t, os.Mkdir(root, 0o755))
	store, err := cache.New(root)
	require.NoError(t, err)
	vmi := testutil.LoadVMI(t, bridgeVMI)
	f := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})

	done := make(chan error, 1)
	go func() {
		// This thread alone becomes nobody (setresuid is per thread in
		// the kernel); it stays locked, so it ends with the goroutine.
		runtime.LockOSThread()
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 65534, ^uintptr(0)); e != 0 {
			done <- e
			return
		}
		done <- phase1.Run(context.Background(), vmi, "", store, phase1.Options{Driver: f})
	}()
	err = <-done

	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorContains(t, err, "the cache "+root+" is not writable by this process (uid 65534): phase1 runs as root, in the privileged agent")
	require.True(t, phase1.IsPermanent(err))
	require.Empty(t, f.Calls())
}
