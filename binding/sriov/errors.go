package sriov

import (
	"errors"
	"fmt"
)

// Sentinels matched by [*AddressError] (through errors.Is).
var (
	// ErrNotSet: the variable is not in the environment.
	ErrNotSet = errors.New("not set")
	// ErrExhausted: every address of the resource is taken by an earlier
	// SR-IOV interface.
	ErrExhausted = errors.New("no unused PCI address left")
	// ErrBadAddress: the address is not dddd:bb:ss.f.
	ErrBadAddress = errors.New("bad PCI address")
	// ErrAddressTwice is a VF address given to a second interface (two
	// hostdevs of one VF: libvirt would refuse the domain).
	ErrAddressTwice = errors.New("PCI address already given to another interface")
	// ErrBadNetworkStatus: the network-status annotation is not the JSON
	// list Multus writes.
	ErrBadNetworkStatus = errors.New("bad network-status annotation")
)

// AddressError is a failure to find the host PCI address of an SR-IOV
// interface.
type AddressError struct {
	// Interface is the VMI interface.
	Interface string
	// Variable is the environment variable or annotation looked at.
	Variable string
	// Value is its value ("" when not set).
	Value string
	// Err matches one of the sentinels of this package.
	Err error
}

func (e *AddressError) Error() string {
	return fmt.Sprintf("%s=%q: %v", e.Variable, e.Value, e.Err)
}

func (e *AddressError) Unwrap() error { return e.Err }
