//go:build linux

package kernelvm

import (
	"errors"
	"fmt"
)

// ErrUnavailable is matched (with errors.Is) by every error that says the
// runner cannot boot a VM on this machine; see [UnavailableError].
var ErrUnavailable = errors.New("kernelvm: runner unavailable")

// ErrUnknownNeed is matched by a [NeedError].
var ErrUnknownNeed = errors.New("kernelvm: unknown need")

// UnavailableError names the one thing that keeps the runner from booting
// a VM here: a missing asset file, qemu binary, privilege or module.
type UnavailableError struct {
	// Missing is the exact missing thing, e.g. "qemu-system-x86_64 in PATH".
	Missing string
	// Hint says how to get it, e.g. "apt-get install -y qemu-system-x86".
	Hint string
	// Err is the underlying error, if any.
	Err error
}

func (e *UnavailableError) Error() string {
	s := "kernelvm: missing " + e.Missing
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrUnavailable].
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// NeedError is returned for a need that the runner does not know.
type NeedError struct {
	// Need is the unknown need as given.
	Need string
}

func (e *NeedError) Error() string {
	return fmt.Sprintf("kernelvm: unknown need %q (known: %s)", e.Need, knownNeeds())
}

// Is reports whether target is [ErrUnknownNeed].
func (e *NeedError) Is(target error) bool { return target == ErrUnknownNeed }

// ModuleError is returned when a module, or one it depends on, is not in
// the asset directory's modules.dep.
type ModuleError struct {
	// Module is the missing module name.
	Module string
	// Dir is the asset directory searched.
	Dir string
}

func (e *ModuleError) Error() string {
	return fmt.Sprintf("kernelvm: module %q is not in %s/modules.dep (add it to scripts/kernelvm-assets.sh and rerun it with VIRTNET_KERNELVM_FORCE=1)", e.Module, e.Dir)
}

// Is reports whether target is [ErrUnavailable]: a missing module is a
// missing asset.
func (e *ModuleError) Is(target error) bool { return target == ErrUnavailable }

// ErrDynamicBinary is matched by the error for a dynamically linked test
// binary whose loader or libraries cannot be found on the host to copy into
// the initramfs. Static binaries (CGO_ENABLED=0) need neither.
var ErrDynamicBinary = errors.New("kernelvm: test binary is dynamically linked and its loader or libraries are missing (build tests with CGO_ENABLED=0)")
