package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/virtnet/virtnet/internal/errclass"
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
	// ErrBadPrevResult: CHECK with a prevResult that does not decode.
	ErrBadPrevResult = errors.New("prevResult does not decode")
	// ErrBadIfName: CNI_IFNAME is not a valid Linux interface name.
	ErrBadIfName = errors.New("CNI_IFNAME is not a valid interface name")
	// ErrNetNSGone: CNI_NETNS does not exist.
	ErrNetNSGone = errors.New("CNI_NETNS does not exist")
	// ErrNotNetNS: CNI_NETNS exists but is not a network namespace.
	ErrNotNetNS = errors.New("CNI_NETNS is not a network namespace")
	// ErrNotSupported: the plugin only works on Linux.
	ErrNotSupported = errclass.ErrNotSupported
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

// Plugin-specific CNI error codes (the CNI spec reserves 0-99 for its own
// codes and leaves 100 and up to plugins).
const (
	// CodeDeviceNotFound is [ErrDeviceNotFound].
	CodeDeviceNotFound uint = 100
	// CodeNotMacvtap is [ErrNotMacvtap].
	CodeNotMacvtap uint = 101
	// CodeIfaceExists is [ErrIfaceExists].
	CodeIfaceExists uint = 102
	// CodeMismatch is [ErrMismatch] (CHECK found the link otherwise).
	CodeMismatch uint = 103
)

// CNIError turns an error of this package into the *types.Error the CNI
// library prints, with the CNI spec's codes:
//
//   - 1 (incompatible CNI version): a cniVersion the plugin does not speak;
//   - 2 (unsupported field): a configuration key the plugin does not know
//     ([cniconfig.ErrUnknownField]);
//   - 3 (container unknown): CNI_NETNS does not exist ([ErrNetNSGone]);
//   - 4 (invalid environment variables): CNI_ARGS, CNI_IFNAME
//     ([ErrBadIfName]) or a CNI_NETNS that is not a namespace
//     ([ErrNotNetNS]);
//   - 6 (failed to decode content): configuration or prevResult that is not
//     the JSON expected ([cniconfig.ErrInvalidJSON], [ErrBadPrevResult]);
//   - 7 (invalid network config): any other configuration error, and a CHECK
//     without prevResult ([ErrNoPrevResult]);
//   - 50 (plugin not available): [ErrNotSupported];
//   - 11 (try again later): a condition a later try of the same verb may
//     not meet: the kernel busy or short of memory (EBUSY, EAGAIN, EINTR,
//     ENOBUFS, ENOMEM), or the verb's context ended;
//   - 100-103: this plugin's own conditions ([CodeDeviceNotFound], …);
//   - 999 (the CNI library's "internal"): anything else, a kernel call that
//     failed for good.
//
// An IPAM plugin's own error keeps its code (an IPAM's 11 stays 11). The
// message is err's text.
func CNIError(err error) error {
	if err == nil {
		return nil
	}
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	return types.NewError(Code(err), err.Error(), "")
}

// Code is the CNI error code [CNIError] gives err.
func Code(err error) uint {
	var ce *cniconfig.ConfigError
	if errors.As(err, &ce) {
		switch {
		case errors.Is(err, cniconfig.ErrUnsupportedVersion):
			return types.ErrIncompatibleCNIVersion
		case errors.Is(err, cniconfig.ErrUnknownField):
			return types.ErrUnsupportedField
		case strings.HasPrefix(ce.Field, "CNI_ARGS"):
			return types.ErrInvalidEnvironmentVariables
		case errors.Is(err, cniconfig.ErrInvalidJSON):
			return types.ErrDecodingFailure
		}
		return types.ErrInvalidNetworkConfig
	}
	for _, c := range []struct {
		sentinel error
		code     uint
	}{
		{ErrNetNSGone, types.ErrUnknownContainer},
		{ErrNotNetNS, types.ErrInvalidEnvironmentVariables},
		{ErrBadIfName, types.ErrInvalidEnvironmentVariables},
		{ErrBadPrevResult, types.ErrDecodingFailure},
		{ErrNoPrevResult, types.ErrInvalidNetworkConfig},
		{ErrNotSupported, types.ErrPluginNotAvailable},
		{ErrDeviceNotFound, CodeDeviceNotFound},
		{ErrNotMacvtap, CodeNotMacvtap},
		{ErrIfaceExists, CodeIfaceExists},
		{ErrMismatch, CodeMismatch},
		{syscall.EBUSY, types.ErrTryAgainLater},
		{syscall.EAGAIN, types.ErrTryAgainLater},
		{syscall.EINTR, types.ErrTryAgainLater},
		{syscall.ENOBUFS, types.ErrTryAgainLater},
		{syscall.ENOMEM, types.ErrTryAgainLater},
		{context.DeadlineExceeded, types.ErrTryAgainLater},
		{context.Canceled, types.ErrTryAgainLater},
	} {
		if errors.Is(err, c.sentinel) {
			return c.code
		}
	}
	return types.ErrInternal
}
