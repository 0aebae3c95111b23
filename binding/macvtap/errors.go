package macvtap

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/binding"
)

// ErrWrongType is matched by the error of a pod link that exists but is
// not a macvtap; the error names the link and its type.
var ErrWrongType = errors.New("not macvtap")

// errNoRecord is a Render or Prepare call without phase1's record (or with
// a record lacking its target).
var errNoRecord = fmt.Errorf("%w: no interface record from phase1 with a target", binding.ErrIncompleteRecord)

// ErrMAC is matched by the error of a MAC address in the record or the
// spec that does not parse.
var ErrMAC = errors.New("bad MAC address")
