package domxml

import (
	"errors"
	"fmt"
)

// VolumeError is a disk whose volume cannot be rendered.
type VolumeError struct {
	// Disk is the disk's path in the VMI, e.g. "spec.domain.devices.disks[1]".
	Disk   string
	Volume string
	Reason string
}

func (e *VolumeError) Error() string {
	return fmt.Sprintf("domxml: %s: volume %q: %s", e.Disk, e.Volume, e.Reason)
}

// PCIAddressError is a PCI address that is not dddd:bb:ss.f.
type PCIAddressError struct {
	Address string
}

func (e *PCIAddressError) Error() string {
	return fmt.Sprintf("domxml: PCI address %q is not dddd:bb:ss.f", e.Address)
}

// FieldError is a VMI field whose value domxml cannot render (Validate
// lets it through, or the VMI was not validated).
type FieldError struct {
	Path  string
	Value any
	Err   error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("domxml: %s (value %q): %v", e.Path, fmt.Sprint(e.Value), e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

var errTooManyPCI = errors.New("more PCI devices than root ports libvirt can index (255)")
