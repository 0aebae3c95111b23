package plugin

import (
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// Sentinels wrapped by [Error]; match them with errors.Is.
var (
	// ErrDeviceNotFound: no host link for deviceID, and no lowerDevice to
	// create one on.
	ErrDeviceNotFound = errors.New("no macvtap for deviceID on the host")
	// ErrNotMacvtap: the link found is not a macvtap.
	ErrNotMacvtap = errors.New("link is not a macvtap")
	// ErrIfaceExists: CNI_IFNAME already exists in the container.
	ErrIfaceExists = errors.New("interface already exists in the container netns")
	// ErrMismatch: CHECK found the link other than configured.
	ErrMismatch = errors.New("does not match")
	// ErrNoPrevResult: CHECK without prevResult.
	ErrNoPrevResult = errors.New("prevResult is required")
	// ErrNotSupported: the plugin only works on Linux.
	ErrNotSupported = errors.New("macvtap CNI plugin: only supported on Linux")
)

// Error is a failure of one step of a CNI verb, naming the link (and the
// namespace where it matters).
type Error struct {
	// Verb is ADD, DEL or CHECK.
	Verb string
	// Step says what was being done ("move to netns", "set MTU", …).
	Step string
	// Link is the link's name, when there is one.
	Link string
	// NetNS is the namespace path, when it matters.
	NetNS string
	Err   error
}

// Error implements error: `macvtap ADD: set MTU 9000 on "mvt…" in netns "/run/netns/x": invalid argument`.
func (e *Error) Error() string {
	s := "macvtap " + e.Verb + ": " + e.Step
	if e.Link != "" {
		s += fmt.Sprintf(" %q", e.Link)
	}
	if e.NetNS != "" {
		s += fmt.Sprintf(" in netns %q", e.NetNS)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// CNIError turns an error of this package into the *types.Error the CNI
// library prints: configuration errors get code 7 (invalid network config),
// the rest code 999 (internal). The message is err's text.
func CNIError(err error) error {
	if err == nil {
		return nil
	}
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	var ce *cniconfig.ConfigError
	if errors.As(err, &ce) {
		return types.NewError(types.ErrInvalidNetworkConfig, err.Error(), "")
	}
	return types.NewError(types.ErrInternal, err.Error(), "")
}
