package phase1

import "fmt"

// Steps of phase1, as named in [*Error].
const (
	StepValidate = "validate"
	StepOpen     = "open namespace"
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
