package phase1

import (
	"fmt"

	"github.com/virtnet/virtnet/cache"
)

// Steps of phase1, as named in [*Error].
const (
	StepValidate = "validate"
	StepOpen     = "open namespace"
	StepLock     = "lock"
	StepRead     = "read cache"
	StepDiscover = "discover"
	StepRecord   = "write cache"
	StepPlan     = "plan"
	StepPrepare  = "prepare"
	StepCleanup  = "cleanup"
	StepCanceled = "canceled"
)

// Error is a failure of phase1 for one interface at one step.
type Error struct {
	// Interface is the VMI interface name ("" for a VMI-wide step).
	Interface string
	Step      string
	Err       error
}

func (e *Error) Error() string {
	if e.Interface == "" {
		return fmt.Sprintf("phase1: %s: %v", e.Step, e.Err)
	}
	return fmt.Sprintf("phase1: interface %q: %s: %v", e.Interface, e.Step, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrLocked is matched by the error of a Run or Cleanup that gave up
// waiting for another run of the same VMI or namespace (step
// [StepLock]); the error names the lock.
var ErrLocked = cache.ErrLocked

// NotNamespaceError is a netns path that is not a network namespace.
type NotNamespaceError struct {
	Path string
	// What the path is ("a regular file", "a mount namespace", …).
	What string
}

func (e *NotNamespaceError) Error() string {
	return fmt.Sprintf("%s is %s, not a network namespace (want /proc/<pid>/ns/net or a bind mount of one, such as /var/run/netns/<name>)", e.Path, e.What)
}
