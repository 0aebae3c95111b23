// Package deviceplugin holds the data side of the macvtap device plugin: the
// DP_MACVTAP_CONF configuration ([ParseConfig], [ConfigFromEnv]), discovery
// of host NICs when that configuration is the empty array ([Discover] over a
// small [LinkLister] seam, with [NetlinkLister] as the real implementation),
// and an [Inventory] that hands out and takes back device slots per resource
// without ever exceeding a resource's capacity.
//
// The daemon that speaks the kubelet device-plugin gRPC protocol, building
// its ListAndWatch and Allocate answers from these types, is
// [github.com/virtnet/virtnet/macvtap/dpserver].
//
// Behaviour follows kubevirt/macvtap-cni; the deliberate differences are:
//   - a capacity written as 0 or a negative number is an error (kubevirt's
//     plugin silently used 100), and capacities above [MaxCapacity] are
//     refused;
//   - a passthru resource can only have capacity 1 (the kernel allows one
//     passthru macvtap per lower device), and defaults to it;
//   - unknown fields, duplicate names and names that are not valid
//     resource or interface names are errors, each naming the entry index
//     and the field;
//   - discovery also skips links enslaved to a bridge or bond and links that
//     are not Ethernet, where creating a macvtap would fail anyway.
package deviceplugin
