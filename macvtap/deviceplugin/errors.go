package deviceplugin

import (
	"errors"
	"fmt"
)

// Sentinels wrapped by [ConfigError]; match them with errors.Is.
var (
	// ErrConfigUnset: the DP_MACVTAP_CONF environment variable is not set.
	ErrConfigUnset = errors.New("not set")
	// ErrInvalidJSON: the document is not a JSON array of objects, or a field
	// has the wrong JSON type.
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrUnknownField: an entry has a field other than name, lowerDevice,
	// mode and capacity, spelt exactly (keys are case-sensitive).
	ErrUnknownField = errors.New("unknown field")
	// ErrRepeatedKey: an entry has a key twice, exactly or in another
	// case ("LowerDevice" next to "lowerDevice").
	ErrRepeatedKey = errors.New("repeated key")
	// ErrRequired: a required field is missing or empty.
	ErrRequired = errors.New("required")
	// ErrInvalidName: name is not usable as a resource name, or lowerDevice
	// is not a valid interface name.
	ErrInvalidName = errors.New("invalid name")
	// ErrDuplicateName: two entries have the same name.
	ErrDuplicateName = errors.New("duplicate name")
	// ErrCapacity: capacity is below 1, above MaxCapacity, or above 1 for a
	// passthru resource.
	ErrCapacity = errors.New("capacity out of range")
)

// ConfigError is a problem with DP_MACVTAP_CONF. Index is the position of the
// offending entry in the array, or -1 when the document as a whole is wrong;
// Field is the JSON field name ("" when the entry as a whole is wrong).
type ConfigError struct {
	Index int
	Field string
	Value string
	Err   error
}

// Error implements error: `DP_MACVTAP_CONF[1].mode "foo": unknown macvtap mode ...`.
func (e *ConfigError) Error() string {
	where := ConfigEnv
	if e.Index >= 0 {
		where = fmt.Sprintf("%s[%d]", where, e.Index)
	}
	if e.Field != "" {
		where += "." + e.Field
	}
	if e.Value != "" {
		where += fmt.Sprintf(" %q", e.Value)
	}
	return where + ": " + e.Err.Error()
}

// Unwrap returns the underlying sentinel or error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Sentinels returned (wrapped) by [Inventory].
var (
	// ErrUnknownResource: no resource has that name.
	ErrUnknownResource = errors.New("unknown resource")
	// ErrUnknownDevice: the device ID is not one of the resource's slots.
	ErrUnknownDevice = errors.New("unknown device ID")
	// ErrInUse: Claim of a slot that is already handed out.
	ErrInUse = errors.New("device slot already in use")
	// ErrNotInUse: Release of a slot that is not handed out.
	ErrNotInUse = errors.New("device slot not in use")
)

// inventoryError is an Inventory failure naming the resource and, where
// there is one, the device ID, wrapping err (one of the sentinels above).
func inventoryError(resource, deviceID string, err error) error {
	s := fmt.Sprintf("macvtap resource %q", resource)
	if deviceID != "" {
		s += fmt.Sprintf(" device %q", deviceID)
	}
	return fmt.Errorf("%s: %w", s, err)
}
