package domxml

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/api"
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

// ErrPCIAddress is matched by the error of a string that is not a PCI
// address dddd:bb:ss.f, here and in the bindings (one sentinel for the
// concept; no caller needs more than the message's value).
var ErrPCIAddress = errors.New("invalid PCI address")

// fieldError is a VMI field whose value domxml cannot render (Validate
// lets it through, or the VMI was not validated): an [*api.FieldError].
func fieldError(path string, value any, err error) error {
	return fmt.Errorf("domxml: %w", &api.FieldError{Path: path, Value: value, Err: err})
}

var errTooManyPCI = errors.New("more PCI devices than root ports libvirt can index (255)")
