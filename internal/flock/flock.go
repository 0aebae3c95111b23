// Package flock takes advisory flock(2) locks and waits for them the way
// phase1 needs: without blocking a thread in the kernel, so that the wait
// ends when the caller's context does.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrLocked is matched by the error of a lock that another process (or
// another open file of this one) held for as long as the caller was
// willing to wait; the error names the lock and wraps the context's error
// too.
var ErrLocked = errors.New("held by another run")

// lockedError is ErrLocked for the lock what, after ctx ended the wait.
func lockedError(ctx context.Context, what string) error {
	return fmt.Errorf("%s is locked: another phase1 run (Run or Cleanup of the same VMI or namespace) holds it (%w); gave up waiting: %w", what, ErrLocked, ctx.Err())
}

// Polling bounds: the first retry comes after minPoll, then the interval
// doubles up to maxPoll.
const (
	minPoll = time.Millisecond
	maxPoll = 50 * time.Millisecond
)

// TryLock takes an exclusive flock on f without waiting; busy reports
// that another open file holds it.
func TryLock(f *os.File) (busy bool, err error) { return tryLock(f) }

// Lock takes an exclusive flock on f, polling with LOCK_NB until it is
// free or ctx is done (a blocking flock cannot be interrupted); it always
// tries once, even with ctx done. The lock goes with f: closing f
// releases it.
func Lock(ctx context.Context, f *os.File, what string) error {
	poll := minPoll
	var timer *time.Timer
	for {
		busy, err := tryLock(f)
		switch {
		case err != nil:
			return fmt.Errorf("lock %s: %w", what, err)
		case !busy:
			return nil
		}
		if ctx.Err() != nil {
			return lockedError(ctx, what)
		}
		if timer == nil {
			timer = time.NewTimer(poll)
			defer timer.Stop()
		} else {
			timer.Reset(poll)
		}
		select {
		case <-ctx.Done():
			return lockedError(ctx, what)
		case <-timer.C:
		}
		poll = min(2*poll, maxPoll)
	}
}
