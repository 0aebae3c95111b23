package phase2

import (
	"errors"
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

// ErrStaleCache is matched by the error of a record that does not match
// the VMI: the error names the interface, the record's path, the field
// that differs, its value in the record and the value the VMI wants. A
// record of another schema version wraps the cache's error too.
var ErrStaleCache = errors.New("stale cache record")

// ErrRender is matched by the error of a binding that failed to render an
// interface: the error names the interface and the binding, and wraps the
// binding's error. Its text is the word the message puts after the
// binding's name.
var ErrRender = errors.New("binding")

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

// ErrInvalidRecord is matched by the error of a record whose value cannot
// be what phase1 wrote: the error names the interface, the record's path,
// the field (the record's JSON name, "routes[1].gateway" for a nested one),
// the value and the reason. Phase2 checks every value it renders or serves
// before use, so a damaged or forged record never reaches the domain XML
// or the DHCP server.
var ErrInvalidRecord = errors.New("invalid cache record")

// invalidRecord is [ErrInvalidRecord] for field of iface's record at path:
// value is refused for reason.
func invalidRecord(iface, path, field, value, reason string) error {
	return fmt.Errorf("phase2: interface %q: %w %s: %s %q: %s (run phase1 again)", iface, ErrInvalidRecord, path, field, value, reason)
}
