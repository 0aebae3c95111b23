package cniconfig

import (
	"errors"
	"fmt"
)

// Sentinels wrapped by [ConfigError]; match them with errors.Is.
var (
	// ErrInvalidJSON: the configuration is not a JSON object of the
	// expected shape.
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrRequired: a required field is missing or empty.
	ErrRequired = errors.New("required")
	// ErrUnsupportedVersion: cniVersion is not one this plugin speaks.
	ErrUnsupportedVersion = errors.New("unsupported CNI version")
	// ErrWrongType: type is not "macvtap".
	ErrWrongType = errors.New(`type must be "macvtap"`)
	// ErrBadMAC: the MAC address does not parse as a 6-byte Ethernet address.
	ErrBadMAC = errors.New("invalid MAC address")
	// ErrMulticastMAC: the MAC address has the multicast bit set.
	ErrMulticastMAC = errors.New("multicast MAC address")
	// ErrZeroMAC: the MAC address is 00:00:00:00:00:00.
	ErrZeroMAC = errors.New("all-zero MAC address")
	// ErrMTURange: mtu is outside MinMTU..MaxMTU.
	ErrMTURange = errors.New("MTU out of range")
	// ErrInvalidName: an interface name is not valid on Linux.
	ErrInvalidName = errors.New("invalid interface name")
	// ErrOutOfRange: owner or group is negative or above [MaxID].
	ErrOutOfRange = errors.New("out of range")
	// ErrUnknownField: a top-level key the plugin does not know.
	ErrUnknownField = errors.New("unknown key (misspelt? the plugin refuses keys it would ignore)")
	// ErrRepeatedKey: an object of the configuration has a key twice,
	// exactly or in another case ("mode" and "Mode").
	ErrRepeatedKey = errors.New("repeated key")
	// ErrBadArgs: CNI_ARGS does not parse.
	ErrBadArgs = errors.New("invalid CNI_ARGS")
)

// ConfigError is a problem with one field of the configuration (Field is
// the JSON name, "ipam.type" for a nested one, "" for the document) or of
// CNI_ARGS (Field "CNI_ARGS" or "CNI_ARGS.MAC").
type ConfigError struct {
	Field string
	Value string
	Err   error
}

// Error implements error: `macvtap config: mac "01:00:5e:00:00:01": multicast MAC address`.
func (e *ConfigError) Error() string {
	s := "macvtap config"
	if e.Field != "" {
		s += ": " + e.Field
	}
	if e.Value != "" {
		s += fmt.Sprintf(" %q", e.Value)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the underlying sentinel or error.
func (e *ConfigError) Unwrap() error { return e.Err }
