package nicxml

import "fmt"

// PCIAddressError is a string that is not a PCI address of the form
// dddd:bb:ss.f (domain, bus, slot, function in hexadecimal).
type PCIAddressError struct {
	Value  string
	Reason string
}

func (e *PCIAddressError) Error() string {
	return fmt.Sprintf("invalid PCI address %q: %s", e.Value, e.Reason)
}
