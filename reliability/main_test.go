//go:build linux

package reliability_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/phase1"
)

// Environment of the helper mode: the test binary re-executed as a
// phase1 process that kills itself with SIGKILL at a chosen kernel call.
const (
	envHelper  = "VIRTNET_RELIABILITY_HELPER" // "kill"
	envNetNS   = "VIRTNET_RELIABILITY_NETNS"
	envCache   = "VIRTNET_RELIABILITY_CACHE"
	envVMI     = "VIRTNET_RELIABILITY_VMI"
	envKillAt  = "VIRTNET_RELIABILITY_KILL_AT"   // mutating call or cache write step number
	envKillWhy = "VIRTNET_RELIABILITY_KILL_WHEN" // "before" or "after" the call, or "write" (at the step)
)

// exitNotKilled is the helper's exit code when phase1 ended without
// reaching the call it was to die at.
const exitNotKilled = 3

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "kill" {
		os.Exit(killHelper())
	}
	os.Exit(m.Run())
}

// killHelper runs phase1 and SIGKILLs itself before or after the mutating
// kernel call number $VIRTNET_RELIABILITY_KILL_AT, or at that step of the
// cache writes (counting every [cache.WriteStep] of every record write).
func killHelper() int {
	at, err := strconv.Atoi(os.Getenv(envKillAt))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	after := os.Getenv(envKillWhy) == "after"
	vmi, err := api.Load([]byte(os.Getenv(envVMI)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	store, err := cache.New(os.Getenv(envCache))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	path := os.Getenv(envNetNS)
	nl, err := kernel.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	kill := func(c intercept.Call) {
		if c.Mutating && c.Seq == at {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
	d := &intercept.Driver{Inner: nl}
	if os.Getenv(envKillWhy) == "write" {
		steps := 0
		store = store.WithHook(func(cache.WriteStep, string, string) error {
			if steps++; steps == at {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		})
	} else if after {
		d.After = func(c intercept.Call, _ time.Duration, _ error) { kill(c) }
	} else {
		d.Before = func(c intercept.Call) error { kill(c); return nil }
	}
	if err := phase1.Run(context.Background(), vmi, path, store, phase1.Options{Driver: d}); err != nil {
		fmt.Fprintln(os.Stderr, "helper: phase1:", err)
		return 1
	}
	return exitNotKilled
}
