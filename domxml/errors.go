package domxml

import (
	"errors"
	"fmt"

	"github.com/virtnet/virtnet/api"
)

// ErrVolume is matched by the error of a disk whose volume cannot be
// rendered; the error names the disk's or the volume's path in the VMI
// (e.g. "spec.domain.devices.disks[1]"), the volume and why.
var ErrVolume = errors.New("volume")

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
