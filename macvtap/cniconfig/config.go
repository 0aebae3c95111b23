package cniconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/virtnet/virtnet/macvtap"
)

// PluginType is the only accepted value of "type".
const PluginType = "macvtap"

// MTU bounds. 68 is the smallest MTU IPv4 allows (the kernel's ETH_MIN_MTU);
// 65535 is the largest a macvtap can take (its real ceiling is the lower
// device's MTU, which only the kernel can check).
const (
	MinMTU = 68
	MaxMTU = 65535
)

// DefaultOwner and DefaultGroup own /dev/tapN after ADD: uid and gid 107,
// the qemu user of KubeVirt's launcher images (api.QemuID), as in
// kubevirt/macvtap-cni. Written out rather than taken from package api,
// whose initialisation the plugin, started for every pod, need not pay
// (TestDefaultOwnerIsQemu keeps them equal).
const (
	DefaultOwner = 107
	DefaultGroup = 107
)

// MaxID is the largest owner or group the configuration accepts:
// 2^32-2. Linux IDs are 32 bits and 2^32-1 is (uid_t)-1, which chown
// reads as "leave unchanged"; anything larger would be truncated (2^32 is
// root).
const MaxID = 1<<32 - 2

// NetConf is the macvtap CNI configuration.
type NetConf struct {
	types.NetConf

	// MAC, when set, is given to the macvtap ("mac").
	MAC string `json:"mac,omitempty"`
	// MTU, when not 0, is set on the macvtap ("mtu").
	MTU int `json:"mtu,omitempty"`
	// DeviceID names the macvtap the device plugin made on the host
	// ("deviceID", filled in by Multus); see [macvtap.HostLinkCandidates].
	DeviceID string `json:"deviceID,omitempty"`
	// PromiscMode turns promiscuous mode on for the macvtap ("promiscMode").
	PromiscMode bool `json:"promiscMode,omitempty"`
	// Mode, when set, is the macvtap mode the plugin makes the link use
	// ("mode"; empty leaves a device-plugin link as it is, and creates in
	// bridge mode).
	Mode string `json:"mode,omitempty"`
	// LowerDevice, when set, lets the plugin create the macvtap on this host
	// link when no link for DeviceID exists ("lowerDevice").
	LowerDevice string `json:"lowerDevice,omitempty"`
	// Owner and Group own /dev/tap<ifindex> after ADD (default 107).
	Owner *int `json:"owner,omitempty"`
	Group *int `json:"group,omitempty"`

	// HardwareAddr is MAC parsed; nil when MAC is empty.
	HardwareAddr net.HardwareAddr `json:"-"`
	// MacvtapMode is Mode parsed; "" when Mode is empty.
	MacvtapMode macvtap.Mode `json:"-"`
}

// OwnerID returns Owner or [DefaultOwner].
func (c *NetConf) OwnerID() int {
	if c.Owner != nil {
		return *c.Owner
	}
	return DefaultOwner
}

// GroupID returns Group or [DefaultGroup].
func (c *NetConf) GroupID() int {
	if c.Group != nil {
		return *c.Group
	}
	return DefaultGroup
}

// SupportedVersions are the CNI spec versions the plugin accepts (all that
// the CNI library implements).
func SupportedVersions() []string { return version.All.SupportedVersions() }

// knownKeys are the top-level keys a configuration may have: the CNI spec's
// own ("cniVersion" … "prevResult", "cni.dev/valid-attachments" of GC), the
// conventions' "runtimeConfig" and "args", the two keys Multus injects for a
// device-plugin resource ("deviceID", and "pciBusID", which this plugin
// ignores), and this plugin's.
var knownKeys = map[string]bool{
	"cniVersion": true, "cniVersions": true, "name": true, "type": true, "capabilities": true,
	"ipam": true, "dns": true, "prevResult": true, "cni.dev/valid-attachments": true,
	"runtimeConfig": true, "args": true, "pciBusID": true,
	"deviceID": true, "mac": true, "mtu": true, "promiscMode": true, "mode": true,
	"lowerDevice": true, "owner": true, "group": true,
}

// Parse decodes and validates the configuration of an attachment (ADD, DEL,
// CHECK): deviceID is required. Every error is a *[ConfigError].
//
// A top-level key the plugin does not know is refused
// ([ErrUnknownField]): every key of this plugin changes what ADD does to a
// VM's only link, so a misspelt one ("promiscmode", "lowerdevice") would
// otherwise be a silently different device. The keys the CNI spec, its
// conventions and Multus add are known (see the package documentation).
func Parse(data []byte) (*NetConf, error) {
	return parse(data, true)
}

// ParseNetwork decodes and validates the configuration of a network, as GC
// and STATUS receive it: no attachment, so no deviceID (Multus adds it per
// attachment). Otherwise as [Parse].
func ParseNetwork(data []byte) (*NetConf, error) {
	return parse(data, false)
}

func parse(data []byte, attachment bool) (*NetConf, error) {
	var c NetConf
	if err := json.Unmarshal(data, &c); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			// Fields of the embedded types.NetConf come back as "NetConf.ipam".
			field := strings.TrimPrefix(typeErr.Field, "NetConf.")
			return nil, &ConfigError{Field: field, Err: fmt.Errorf("%w: got JSON %s, want %s", ErrInvalidJSON, typeErr.Value, typeErr.Type)}
		}
		return nil, &ConfigError{Err: fmt.Errorf("%w: %w", ErrInvalidJSON, err)}
	}
	if err := checkRepeatedKeys(data); err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("%w: want an object: %w", ErrInvalidJSON, err)}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !knownKeys[k] {
			return nil, &ConfigError{Field: k, Err: ErrUnknownField}
		}
	}
	if err := c.validate(attachment); err != nil {
		return nil, err
	}
	if c.IPAM.Type == "" {
		// types.IPAM keeps only "type": look at the raw object to refuse an
		// IPAM section whose type was forgotten ("{}" counts as no IPAM).
		var raw struct {
			IPAM map[string]json.RawMessage `json:"ipam"`
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, &ConfigError{Field: "ipam", Err: fmt.Errorf("%w: want an object: %w", ErrInvalidJSON, err)}
		}
		if len(raw.IPAM) > 0 {
			return nil, &ConfigError{Field: "ipam.type", Err: ErrRequired}
		}
	}
	return &c, nil
}

// validate checks every field (deviceID is required of an attachment) and
// fills HardwareAddr and MacvtapMode.
func (c *NetConf) validate(attachment bool) error {
	switch {
	case c.CNIVersion == "":
		return &ConfigError{Field: "cniVersion", Err: ErrRequired}
	case !slices.Contains(SupportedVersions(), c.CNIVersion):
		return &ConfigError{Field: "cniVersion", Value: c.CNIVersion, Err: fmt.Errorf("%w (want one of %v)", ErrUnsupportedVersion, SupportedVersions())}
	case c.Name == "":
		return &ConfigError{Field: "name", Err: ErrRequired}
	case c.Type != PluginType:
		return &ConfigError{Field: "type", Value: c.Type, Err: ErrWrongType}
	case attachment && c.DeviceID == "":
		return &ConfigError{Field: "deviceID", Err: ErrRequired}
	case c.MTU != 0 && (c.MTU < MinMTU || c.MTU > MaxMTU):
		return &ConfigError{Field: "mtu", Value: strconv.Itoa(c.MTU), Err: fmt.Errorf("%w: want %d to %d", ErrMTURange, MinMTU, MaxMTU)}
	case c.Owner != nil && (*c.Owner < 0 || int64(*c.Owner) > MaxID):
		return &ConfigError{Field: "owner", Value: strconv.Itoa(*c.Owner), Err: fmt.Errorf("%w: want 0 to %d", ErrOutOfRange, int64(MaxID))}
	case c.Group != nil && (*c.Group < 0 || int64(*c.Group) > MaxID):
		return &ConfigError{Field: "group", Value: strconv.Itoa(*c.Group), Err: fmt.Errorf("%w: want 0 to %d", ErrOutOfRange, int64(MaxID))}
	}
	if c.MAC != "" {
		hw, err := ParseMAC(c.MAC)
		if err != nil {
			return &ConfigError{Field: "mac", Value: c.MAC, Err: err}
		}
		c.HardwareAddr = hw
	}
	if c.Mode != "" {
		m, err := macvtap.ParseMode(c.Mode)
		if err != nil {
			return &ConfigError{Field: "mode", Value: c.Mode, Err: err}
		}
		c.MacvtapMode = m
	}
	if c.LowerDevice != "" {
		if err := macvtap.ValidIfName(c.LowerDevice); err != nil {
			return &ConfigError{Field: "lowerDevice", Value: c.LowerDevice, Err: fmt.Errorf("%w: %w", ErrInvalidName, err)}
		}
	}
	return nil
}

// ParseMAC parses a unicast, non-zero, 6-byte Ethernet MAC address.
func ParseMAC(s string) (net.HardwareAddr, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMAC, err)
	}
	if len(hw) != 6 {
		return nil, fmt.Errorf("%w: %d bytes, want a 6-byte Ethernet address", ErrBadMAC, len(hw))
	}
	if hw[0]&1 != 0 {
		return nil, ErrMulticastMAC
	}
	if slices.Equal(hw, make(net.HardwareAddr, 6)) {
		return nil, ErrZeroMAC
	}
	return hw, nil
}

// EffectiveMAC returns the MAC the macvtap must get: MAC of CNI_ARGS
// ("K8S_POD_NAME=…;MAC=02:…") if set, else the configuration's mac, else
// nil (keep the kernel's random one). Other keys of CNI_ARGS are ignored
// (runtimes pass pod metadata).
func (c *NetConf) EffectiveMAC(args string) (net.HardwareAddr, error) {
	var a struct {
		types.CommonArgs
		MAC types.UnmarshallableString `json:"mac,omitempty"`
	}
	a.IgnoreUnknown = true
	if err := types.LoadArgs(args, &a); err != nil {
		return nil, &ConfigError{Field: "CNI_ARGS", Err: fmt.Errorf("%w: %w", ErrBadArgs, err)}
	}
	if a.MAC == "" {
		return c.HardwareAddr, nil
	}
	hw, err := ParseMAC(string(a.MAC))
	if err != nil {
		return nil, &ConfigError{Field: "CNI_ARGS.MAC", Value: string(a.MAC), Err: err}
	}
	return hw, nil
}

// checkRepeatedKeys refuses a key repeated in any object of data, exactly
// or in another case ("mode" twice, "mode" and "Mode"): encoding/json, and
// the IPAM plugin's decoder after it, would take the last one silently.
// data is valid JSON (the caller decoded it already).
func checkRepeatedKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return &ConfigError{Field: path, Err: fmt.Errorf("%w: %w", ErrInvalidJSON, err)}
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]string{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return &ConfigError{Field: path, Err: fmt.Errorf("%w: %w", ErrInvalidJSON, err)}
				}
				key, _ := kt.(string)
				at := key
				if path != "" {
					at = path + "." + key
				}
				if prev, dup := seen[strings.ToLower(key)]; dup {
					if prev == key {
						return &ConfigError{Field: at, Err: fmt.Errorf("%w: it appears twice", ErrRepeatedKey)}
					}
					return &ConfigError{Field: at, Err: fmt.Errorf("%w: %q and %q differ only in case", ErrRepeatedKey, prev, key)}
				}
				seen[strings.ToLower(key)] = key
				if err := walk(at); err != nil {
					return err
				}
			}
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		default:
			return nil
		}
		_, err = dec.Token() // the closing delimiter
		return err
	}
	return walk("")
}
