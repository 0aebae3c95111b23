package nsexec

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// Do runs fn with the calling goroutine's work moved to a fresh OS thread
// that has entered the network namespace at nsPath ("" runs fn in the
// current namespace).
//
// Why: setns(2) changes the namespace of one thread, while the Go runtime
// moves goroutines between threads. Do locks a new goroutine to its thread,
// enters the namespace, runs fn and switches back; if switching back fails,
// the thread stays locked and the runtime discards it when the goroutine
// ends, so no other goroutine ever runs in the wrong namespace. Only the
// operations that work from inside only (opening /dev/net/tun, writing
// /proc/sys/net, the ethtool ioctl) go through Do; netlink and nftables use
// handles bound to the namespace instead.
func Do(nsPath string, fn func() error) error {
	if nsPath == "" {
		return fn()
	}
	target, err := os.Open(nsPath)
	if err != nil {
		return fmt.Errorf("open network namespace %s: %w", nsPath, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	goLocked(func() {
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open current network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace %s: %w", nsPath, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with this goroutine.
			errc <- fmt.Errorf("leave network namespace %s: %w (after: %v)", nsPath, err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	})
	return <-errc
}
