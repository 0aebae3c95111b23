package sriov

import "errors"

// Sentinels matched by the errors of [Addresses] and Render, which name
// the variable (or annotation) looked at and its value ("" when not set):
// `VARIABLE="value": reason`.
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
