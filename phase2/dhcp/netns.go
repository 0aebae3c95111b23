package dhcp

import (
	"fmt"
	"runtime"

	"github.com/vishvananda/netns"
)

// inNetNS runs fn on a fresh goroutine whose OS thread has entered the
// network namespace at path, so sockets fn creates belong to that namespace
// (a socket keeps the namespace it was created in, whatever thread uses it
// later). If switching back fails the thread stays locked and is discarded
// when the goroutine ends, so no other goroutine ever runs in the wrong
// namespace. An empty path runs fn where the caller is.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: current namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: enter: %w", path, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			errc <- fmt.Errorf("netns %s: switch back: %w (thread discarded)", path, err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
