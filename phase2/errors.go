package phase2

import "fmt"

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
