package macvtap

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/binding"
)

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

// errNoRecord is a Render or Prepare call without phase1's record (or with
// a record lacking its target).
var errNoRecord = fmt.Errorf("%w: no interface record from phase1 with a target", binding.ErrIncompleteRecord)

// ErrMAC is matched by the error of a MAC address in the record or the
// spec that does not parse.
var ErrMAC = errors.New("bad MAC address")
