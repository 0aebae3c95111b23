package macvtap

import (
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// ResourceNamespace is the Kubernetes extended-resource namespace of the
// macvtap device plugin: a resource named "eth0" is advertised as
// "macvtap.network.kubevirt.io/eth0".
const ResourceNamespace = "macvtap.network.kubevirt.io"

// ResourceName returns the full extended-resource name of the device-plugin
// resource called name.
func ResourceName(name string) string { return ResourceNamespace + "/" + name }

// MaxIfNameLen is the longest Linux interface name (IFNAMSIZ - 1).
const MaxIfNameLen = 15

// DeviceID returns the device-plugin device ID of slot index of the resource
// called resource: "<resource>Mvp<index>", as kubevirt/macvtap-cni names
// them. Multus passes this ID to the CNI plugin as "deviceID".
func DeviceID(resource string, index int) string {
	return fmt.Sprintf("%sMvp%d", resource, index)
}

// HostLinkName returns the name of the macvtap link the device plugin
// creates on the host for deviceID: "mvt" followed by the low 48 bits of the
// xxHash64 of the device ID in 12 hex digits. It always fits in
// [MaxIfNameLen], whatever the resource name's length, and matches the name
// later kubevirt/macvtap-cni releases use, so either device plugin works with
// either CNI plugin. (Releases up to v0.11 named the macvtap after the device
// ID itself; the CNI plugin looks for that name too, see [HostLinkCandidates].)
func HostLinkName(deviceID string) string {
	return fmt.Sprintf("mvt%012x", xxhash.Sum64String(deviceID)&0xffffffffffff)
}

// HostLinkCandidates returns the host link names under which the macvtap of
// deviceID may exist, in the order the CNI plugin tries them: the device ID
// itself (kubevirt/macvtap-cni up to v0.11, and deviceIDs that name a link
// directly) when it is a valid interface name, then [HostLinkName].
func HostLinkCandidates(deviceID string) []string {
	var out []string
	if ValidIfName(deviceID) == nil {
		out = append(out, deviceID)
	}
	if h := HostLinkName(deviceID); h != deviceID {
		out = append(out, h)
	}
	return out
}

// ValidIfName reports why name cannot be a Linux interface name, or nil. The
// rules are the kernel's dev_valid_name: 1 to 15 bytes, not "." or "..", no
// '/', ':' or white space.
func ValidIfName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("interface name is empty")
	case len(name) > MaxIfNameLen:
		return fmt.Errorf("interface name %q is longer than %d bytes", name, MaxIfNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is not allowed", name)
	case strings.ContainsAny(name, "/: \t\n\v\f\r"):
		return fmt.Errorf("interface name %q contains '/', ':' or white space", name)
	}
	return nil
}
