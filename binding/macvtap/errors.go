package macvtap

import "fmt"

// WrongTypeError is a pod interface that exists but is not a macvtap link.
type WrongTypeError struct {
	// Interface is the VMI interface, Link the pod link and Type the
	// link's kind as found.
	Interface string
	Link      string
	Type      string
}

func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("pod link %q is of type %q, not macvtap", e.Link, e.Type)
}

// MissingRecordError is a Render or Prepare call without phase1's record
// (or with a record lacking its target).
type MissingRecordError struct{ Interface string }

func (e *MissingRecordError) Error() string {
	return "no interface record from phase1 with a target"
}

// MACError is a MAC address in the record or the spec that does not parse.
type MACError struct {
	Interface string
	Value     string
	Err       error
}

func (e *MACError) Error() string {
	return fmt.Sprintf("bad MAC address %q: %v", e.Value, e.Err)
}

func (e *MACError) Unwrap() error { return e.Err }
