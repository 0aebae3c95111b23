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

// ErrLocked is matched by every [*LockedError].
var ErrLocked = errors.New("held by another run")

// LockedError is a lock that another process (or another open file of
// this one) held for as long as the caller was willing to wait.
type LockedError struct {
	// What names the lock ("VMI cache directory /var/run/…").
	What string
	// Err is why the wait ended: the context's error.
	Err error
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is locked: another phase1 run (Run or Cleanup of the same VMI or namespace) holds it; gave up waiting: %v", e.What, e.Err)
}

// Unwrap returns the reason the wait ended.
func (e *LockedError) Unwrap() error { return e.Err }

// Is makes a LockedError match [ErrLocked].
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

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
			return &LockedError{What: what, Err: ctx.Err()}
		}
		if timer == nil {
			timer = time.NewTimer(poll)
			defer timer.Stop()
		} else {
			timer.Reset(poll)
		}
		select {
		case <-ctx.Done():
			return &LockedError{What: what, Err: ctx.Err()}
		case <-timer.C:
		}
		poll = min(2*poll, maxPoll)
	}
}
