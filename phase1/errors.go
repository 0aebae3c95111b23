package phase1

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/errclass"
	"github.com/virtnet/virtnet/netdriver"
)

// Steps of phase1, as named in [*Error].
const (
	StepValidate = "validate"
	StepOpen     = "open namespace"
	StepLock     = "lock"
	// StepNamespace: the records describe another network namespace.
	StepNamespace = "check namespace"
	StepRead      = "read cache"
	StepDiscover  = "discover"
	StepRecord    = "write cache"
	StepPlan      = "plan"
	StepPrepare   = "prepare"
	StepCleanup   = "cleanup"
	StepCanceled  = "canceled"
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

// Permanent reports whether running phase1 again cannot succeed until
// someone changes the VMI, the pod or the node: the analogue of KubeVirt's
// CriticalNetworkError, on which virt-handler fails the VMI instead of
// retrying. Permanence is asked of the errors themselves: the first error
// in the chain with a method Permanent() bool answers, the same for the
// core bindings and one outside this module. Those of this module that
// answer true are
//
//   - a failure at [StepValidate] (a VMI, name or option phase1 refuses):
//     [api.ErrInvalid], [*api.FieldError], [*api.UnsupportedError];
//   - a link under one of phase1's names that is not phase1's
//     ([*binding.ForeignLinkError]), an address phase1 needs on another
//     link ([*binding.AddressInUseError]), a pod link that is missing, not
//     as the CNI leaves it or already prepared ([*binding.PodLinkError]), a
//     masquerade VM network overlapping the pod's ([*masquerade.OverlapError]),
//     a pod link without the address a binding needs ([binding.ErrNoAddress]);
//   - a path that is not a network namespace ([ErrNotNamespace]), a
//     cache that is unsafe, corrupt, of another version, asked for a bad
//     name or describing another namespace ([*cache.UnsafeError],
//     [*cache.CorruptError], [*cache.VersionError], [*cache.NameError],
//     [*cache.NamespaceMismatchError]);
//   - no support ([ErrNotSupported]).
//
// With no such method in the chain, no privilege (EPERM, EACCES) and no
// support from the kernel (EOPNOTSUPP) are permanent.
//
// Everything else is retryable, because a re-run resumes and converges
// (see the package doc): transient kernel errors (EBUSY, EAGAIN,
// ENOBUFS, EINTR, ETIMEDOUT), another run holding the lock ([ErrLocked]),
// a context that ended, and errors phase1 does not know. A caller retries
// those with a backoff, as virt-handler retries everything but a
// CriticalNetworkError.
func (e *Error) Permanent() bool { return e.Step == StepValidate || IsPermanent(e.Err) }

// IsPermanent reports whether err, or the [*Error] it wraps, is permanent
// (see [Error.Permanent]); nil is not.
func IsPermanent(err error) bool {
	var marked interface{ Permanent() bool }
	if errors.As(err, &marked) {
		return marked.Permanent()
	}
	// The kernel's own classes: no privilege, no support.
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EOPNOTSUPP)
}

// ErrLinkNotFound is matched by the error of a link that does not exist,
// the pod link first of all ([*binding.PodLinkError] wraps it); one
// sentinel with the kernel seam's, so that one errors.Is works everywhere.
var ErrLinkNotFound = netdriver.ErrLinkNotFound

// ErrNotSupported is matched by the error of a Run or Cleanup on a system
// without the kernel interfaces phase1 needs (any OS but Linux).
var ErrNotSupported = netdriver.ErrNotSupported

// ErrLocked is matched by the error of a Run or Cleanup that gave up
// waiting for another run of the same VMI or namespace (step
// [StepLock]); the error names the lock.
var ErrLocked = cache.ErrLocked

// ErrNotNamespace is matched by the error of a netns path that is not a
// network namespace; the message names the path and what it is. It is
// permanent: the caller must pass another path (a path that does not
// exist included: the pod's process is gone, and a new one has a new
// path).
var ErrNotNamespace = errclass.Permanent("not a network namespace")
