package prestart

import (
	"errors"
	"fmt"
)

// StepError is the failure of one step of [Hook.Run]: the step's name and
// its error. No later step ran.
type StepError struct {
	Step string
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("prestart: step %s: %v", e.Step, e.Err) }

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// ErrInvalidHook is matched by the error of a [Hook] field that is missing
// or wrong (Run checks them before any step); the error names the field.
var ErrInvalidHook = errors.New("prestart: invalid hook")

// errRequired is why a required Hook field is refused.
var errRequired = errors.New("required")

// hookError is [ErrInvalidHook] for the Hook field field, because of why.
func hookError(field string, why error) error {
	return fmt.Errorf("%w: Hook.%s: %w", ErrInvalidHook, field, why)
}

// DiskError is a disk source the storage step cannot provide: the volume,
// the path and why.
type DiskError struct {
	Volume string
	Path   string
	Err    error
}

func (e *DiskError) Error() string {
	return fmt.Sprintf("volume %q: %s: %v", e.Volume, e.Path, e.Err)
}

// Unwrap returns the cause.
func (e *DiskError) Unwrap() error { return e.Err }
