package phase2

import (
	"fmt"

	"github.com/virtnet/virtnet/cache"
)

// MissingCacheError is an interface whose binding needs phase1's record,
// and the record does not exist: phase1 did not run (or not to the end)
// for this interface.
type MissingCacheError struct {
	Interface string
	Path      string
	Err       error
}

func (e *MissingCacheError) Error() string {
	return fmt.Sprintf("phase2: interface %q: no cache record at %s (has phase1 run?)", e.Interface, e.Path)
}

func (e *MissingCacheError) Unwrap() error { return e.Err }

// StaleCacheError is a record that does not match the VMI: Field differs
// (Got in the record, Want from the VMI). Err is the cache's error for a
// version mismatch.
type StaleCacheError struct {
	Interface string
	Path      string
	Field     string
	Got, Want string
	Err       error
}

func (e *StaleCacheError) Error() string {
	return fmt.Sprintf("phase2: interface %q: stale cache record %s: %s is %q, the VMI wants %q (run phase1 again)",
		e.Interface, e.Path, e.Field, e.Got, e.Want)
}

func (e *StaleCacheError) Unwrap() error { return e.Err }

// RenderError is a binding that failed to render an interface.
type RenderError struct {
	Interface string
	Binding   string
	Err       error
}

func (e *RenderError) Error() string {
	return fmt.Sprintf("phase2: interface %q: %s binding: %v", e.Interface, e.Binding, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// NotReadyError is an interface whose record exists but whose phase1 did
// not finish (state pending or started, e.g. after a crash): its bridge
// or tap may be missing, so phase2 neither renders it nor serves DHCP.
type NotReadyError struct {
	Interface string
	Path      string
	State     cache.State
	Err       error
}

func (e *NotReadyError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("phase2: interface %q: phase1 progress record %s: %v (run phase1 again)", e.Interface, e.Path, e.Err)
	}
	return fmt.Sprintf("phase2: interface %q: phase1 is in state %q, not finished, per %s (run phase1 again)", e.Interface, e.State, e.Path)
}

func (e *NotReadyError) Unwrap() error { return e.Err }

// InvalidRecordError is a record whose value cannot be what phase1 wrote:
// Field (the record's JSON name, "routes[1].gateway" for a nested one)
// holds Value, refused for Reason. Phase2 checks every value it renders or
// serves before use, so a damaged or forged record never reaches the domain
// XML or the DHCP server.
type InvalidRecordError struct {
	Interface string
	Path      string
	Field     string
	Value     string
	Reason    string
}

func (e *InvalidRecordError) Error() string {
	return fmt.Sprintf("phase2: interface %q: invalid cache record %s: %s %q: %s (run phase1 again)",
		e.Interface, e.Path, e.Field, e.Value, e.Reason)
}
