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

// ErrDisk is matched by the error of a disk source the hook cannot
// provide or set up: the error names the volume and the path, and wraps
// the cause.
var ErrDisk = errors.New("disk")

// diskError is [ErrDisk] for the source at path of volume, because of err.
func diskError(volume, path string, err error) error {
	return fmt.Errorf("volume %q: %w %s: %w", volume, ErrDisk, path, err)
}
