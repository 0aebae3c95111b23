package deviceplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/virtnet/virtnet/macvtap"
)

// ConfigEnv is the environment variable holding the device plugin's
// configuration.
const ConfigEnv = "DP_MACVTAP_CONF"

// DefaultCapacity is the number of macvtap slots of a resource whose
// capacity is not configured.
const DefaultCapacity = 100

// MaxCapacity bounds a resource's capacity. The kernel numbers macvtap
// character devices with 20 minor bits; 65536 slots on one NIC is already far
// beyond what a node can run, and the bound keeps a typo from making the
// plugin advertise millions of devices.
const MaxCapacity = 65536

// Resource is one device-plugin resource: up to Capacity macvtap devices in
// Mode on top of LowerDevice, advertised as
// macvtap.network.kubevirt.io/<Name>.
type Resource struct {
	Name        string       `json:"name"`
	LowerDevice string       `json:"lowerDevice"`
	Mode        macvtap.Mode `json:"mode"`
	Capacity    int          `json:"capacity"`
}

// ResourceName returns the full extended-resource name,
// "macvtap.network.kubevirt.io/<Name>".
func (r Resource) ResourceName() string { return macvtap.ResourceName(r.Name) }

// DefaultResource is the resource that discovery makes for a host NIC:
// named after it, in bridge mode, with [DefaultCapacity] slots.
func DefaultResource(lowerDevice string) Resource {
	return Resource{Name: lowerDevice, LowerDevice: lowerDevice, Mode: macvtap.DefaultMode, Capacity: DefaultCapacity}
}

// entry is the wire form of one array element; Capacity is a pointer to
// tell "absent" from 0 (an absent or empty string is "unset" for the
// others).
type entry struct {
	Name        string `json:"name"`
	LowerDevice string `json:"lowerDevice"`
	Mode        string `json:"mode"`
	Capacity    *int   `json:"capacity"`
}

// resourceNameRE is the Kubernetes rule for the name part of a qualified
// name (the part after the slash of an extended-resource name).
var resourceNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// maxResourceNameLen is the Kubernetes limit on the name part.
const maxResourceNameLen = 63

// ConfigFromEnv reads and parses [ConfigEnv] through lookup (os.LookupEnv in
// production). An unset variable is an error, as in kubevirt/macvtap-cni,
// whose manifests always set it ("[]" for discovery).
func ConfigFromEnv(lookup func(string) (string, bool)) ([]Resource, error) {
	v, ok := lookup(ConfigEnv)
	if !ok {
		return nil, &ConfigError{Index: -1, Err: ErrConfigUnset}
	}
	return ParseConfig([]byte(v))
}

// ParseConfig parses and validates a DP_MACVTAP_CONF document: a JSON array
// of {name, lowerDevice, mode, capacity} objects. It fills defaults (mode
// bridge, capacity 100, or 1 for passthru). "[]" and "null" give an empty
// slice, which means "one resource per host NIC" (see [Discover]). Every
// error is a *[ConfigError] naming the entry index and the field.
func ParseConfig(data []byte) ([]Resource, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, &ConfigError{Index: -1, Err: fmt.Errorf("%w: want an array of objects: %w", ErrInvalidJSON, err)}
	}
	out := make([]Resource, 0, len(raw))
	seen := make(map[string]int, len(raw))
	for i, msg := range raw {
		r, err := parseEntry(i, msg)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[r.Name]; dup {
			return nil, &ConfigError{Index: i, Field: "name", Value: r.Name,
				Err: fmt.Errorf("%w: entry %d has it too", ErrDuplicateName, j)}
		}
		seen[r.Name] = i
		out = append(out, r)
	}
	return out, nil
}

// entryKeys are the keys of one entry, spelt exactly.
var entryKeys = []string{"name", "lowerDevice", "mode", "capacity"}

// checkEntryKeys refuses what encoding/json would take silently in entry
// i: a key repeated (the last would win) or repeated in another case
// ("LowerDevice" next to "lowerDevice"), and a known key in another case
// alone ("LowerDevice", which encoding/json matches without regard to
// case). A value that is not an object is left to the decoder.
func checkEntryKeys(i int, msg json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	seen := map[string]string{} // lower case -> as written
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil // the decoder names it
		}
		key, _ := kt.(string)
		if prev, dup := seen[strings.ToLower(key)]; dup {
			if prev == key {
				return &ConfigError{Index: i, Field: key, Err: fmt.Errorf("%w: it appears twice", ErrRepeatedKey)}
			}
			return &ConfigError{Index: i, Field: key, Err: fmt.Errorf("%w: %q and %q differ only in case", ErrRepeatedKey, prev, key)}
		}
		seen[strings.ToLower(key)] = key
		if !slices.Contains(entryKeys, key) {
			if j := slices.IndexFunc(entryKeys, func(k string) bool { return strings.EqualFold(k, key) }); j >= 0 {
				return &ConfigError{Index: i, Field: key, Err: fmt.Errorf("%w (keys are case-sensitive: did you mean %q?)", ErrUnknownField, entryKeys[j])}
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
	}
	return nil
}

func parseEntry(i int, msg json.RawMessage) (Resource, error) {
	if err := checkEntryKeys(i, msg); err != nil {
		return Resource{}, err
	}
	var e entry
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Resource{}, entryDecodeError(i, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Resource{}, &ConfigError{Index: i, Err: fmt.Errorf("%w: trailing data", ErrInvalidJSON)}
	}
	if bytes.Equal(bytes.TrimSpace(msg), []byte("null")) {
		return Resource{}, &ConfigError{Index: i, Err: fmt.Errorf("%w: entry is null, want an object", ErrInvalidJSON)}
	}

	var r Resource
	switch {
	case e.Name == "":
		return r, &ConfigError{Index: i, Field: "name", Err: ErrRequired}
	case len(e.Name) > maxResourceNameLen || !resourceNameRE.MatchString(e.Name):
		return r, &ConfigError{Index: i, Field: "name", Value: e.Name, Err: fmt.Errorf(
			"%w: want at most %d letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
			ErrInvalidName, maxResourceNameLen)}
	}
	r.Name = e.Name

	if e.LowerDevice == "" {
		return r, &ConfigError{Index: i, Field: "lowerDevice", Err: ErrRequired}
	}
	if err := macvtap.ValidIfName(e.LowerDevice); err != nil {
		return r, &ConfigError{Index: i, Field: "lowerDevice", Value: e.LowerDevice, Err: fmt.Errorf("%w: %w", ErrInvalidName, err)}
	}
	r.LowerDevice = e.LowerDevice

	m, err := macvtap.ParseMode(e.Mode)
	if err != nil {
		return r, &ConfigError{Index: i, Field: "mode", Value: e.Mode, Err: err}
	}
	r.Mode = m

	switch {
	case e.Capacity == nil && r.Mode == macvtap.ModePassthru:
		r.Capacity = 1
	case e.Capacity == nil:
		r.Capacity = DefaultCapacity
	case *e.Capacity < 1 || *e.Capacity > MaxCapacity:
		return r, &ConfigError{Index: i, Field: "capacity", Value: fmt.Sprint(*e.Capacity),
			Err: fmt.Errorf("%w: want 1 to %d", ErrCapacity, MaxCapacity)}
	case r.Mode == macvtap.ModePassthru && *e.Capacity != 1:
		return r, &ConfigError{Index: i, Field: "capacity", Value: fmt.Sprint(*e.Capacity),
			Err: fmt.Errorf("%w: a passthru resource has exactly one slot", ErrCapacity)}
	default:
		r.Capacity = *e.Capacity
	}
	return r, nil
}

// entryDecodeError turns an encoding/json error about entry i into a
// ConfigError that names the field when encoding/json knows it.
func entryDecodeError(i int, err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return &ConfigError{Index: i, Field: typeErr.Field, Err: fmt.Errorf("%w: got JSON %s, want %s", ErrInvalidJSON, typeErr.Value, typeErr.Type)}
	}
	// encoding/json reports unknown fields only as text: `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &ConfigError{Index: i, Field: strings.Trim(name, `"`), Err: ErrUnknownField}
	}
	return &ConfigError{Index: i, Err: fmt.Errorf("%w: %w", ErrInvalidJSON, err)}
}
