package phase1

import "strconv"

// String is the uid, or "the VMI's" for the zero value (only the tests
// print a TapOwner).
func (o TapOwner) String() string {
	if !o.set {
		return "the VMI's"
	}
	return strconv.Itoa(o.uid)
}
