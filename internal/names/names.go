package names

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// MaxLinkName is the longest link name the kernel accepts (IFNAMSIZ-1).
const MaxLinkName = 15

// Name prefixes and suffixes.
const (
	BridgePrefix = "k6t-"
	TapPrefix    = "tap"
	NICSuffix    = "-nic"
	nicPrefix    = "nic-"
)

// ErrLinkName is matched by the error of a name that cannot be a Linux
// link name.
var ErrLinkName = errors.New("invalid link name")

// FileName reports whether name can be one component of a path virtnet
// builds (a VMI UID or an interface name in a cache record's path): not
// empty, at most 253 bytes, no '/', '\\' or NUL, and not starting with '.'
// (no ".", "..", and nothing the store's temporary files could shadow).
func FileName(name string) bool {
	return name != "" && len(name) <= 253 && !strings.ContainsAny(name, "/\x00\\") && !strings.HasPrefix(name, ".")
}

// CheckLinkName reports whether name is a valid Linux link name: 1 to 15
// bytes, not "." or "..", without '/', ':', NUL or white space (the
// kernel's dev_valid_name).
func CheckLinkName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w %q: %s", ErrLinkName, name, "empty")
	case len(name) > MaxLinkName:
		return fmt.Errorf("%w %q: %s", ErrLinkName, name, fmt.Sprintf("longer than %d bytes", MaxLinkName))
	case name == "." || name == "..":
		return fmt.Errorf("%w %q: %s", ErrLinkName, name, "'.' and '..' are not link names")
	case strings.ContainsAny(name, "/:\x00 \t\n\r\v\f"):
		return fmt.Errorf("%w %q: %s", ErrLinkName, name, "contains '/', ':', NUL or white space")
	}
	return nil
}

func shortForm(kind, prefix, pod, want string) string {
	if len(want) <= MaxLinkName {
		return want
	}
	sum := sha256.Sum256([]byte(kind + "/" + pod))
	return prefix + hex.EncodeToString(sum[:])[:MaxLinkName-len(prefix)]
}

// HashedPrefix starts KubeVirt 1.x's pod interface names of Multus
// networks ("pod" + 11 hex digits, see api.HashedPodInterface); the
// derived names leave it out.
const HashedPrefix = "pod"

// Bridge is the in-pod bridge of a pod interface: "k6t-" followed by the
// pod interface name without a leading "pod" ("eth0" → "k6t-eth0",
// "pod16477688c0e" → "k6t-16477688c0e").
func Bridge(pod string) string {
	return shortForm("bridge", BridgePrefix, pod, BridgePrefix+strings.TrimPrefix(pod, HashedPrefix))
}

// Tap is the VM's tap of a pod interface: "tap0" for the primary one (the
// pod network or a Multus default network, whatever its pod interface is
// called, e.g. "ovn-udn1"), else "tap" followed by the pod interface name
// after its first three letters ("net1" → "tap1", "pod16477688c0e" →
// "tap16477688c0e").
func Tap(pod string, primary bool) string {
	if primary {
		return PrimaryTap
	}
	rest := pod
	if len(pod) > 3 {
		rest = pod[3:]
	}
	return shortForm("tap", TapPrefix, pod, TapPrefix+rest)
}

// PrimaryTap is the tap of the primary pod interface.
const PrimaryTap = "tap0"

// NIC is the name the bridge binding gives the pod link before it creates
// the dummy that keeps the pod IP: the pod interface name without a
// leading "pod", followed by "-nic" ("eth0" → "eth0-nic",
// "pod16477688c0e" → "16477688c0e-nic").
func NIC(pod string) string {
	return shortForm("nic", nicPrefix, pod, strings.TrimPrefix(pod, HashedPrefix)+NICSuffix)
}

// Links are the names of the links phase1 makes, or renames, for one pod
// interface.
type Links struct {
	// Bridge is the in-pod bridge ([Bridge]), Tap the VM's tap ([Tap]),
	// NIC the pod link once the bridge binding renamed it ([NIC]).
	Bridge, Tap, NIC string
}

// For derives every link name of the pod interface pod (primary: the pod
// network's or a Multus default network's): the one place phase1, its
// records and the hand-off record's reader take them from.
func For(pod string, primary bool) Links {
	return Links{Bridge: Bridge(pod), Tap: Tap(pod, primary), NIC: NIC(pod)}
}

// LegacyBridge and LegacyNIC are the bridge and NIC names virtnet builds before v0.1.0
// gave a pod interface, before KubeVirt v1.9.0's names: "k6t-<pod>" and
// "<pod>-nic", or their short forms past 15 bytes (for "pod16477688c0e":
// "k6t-58d19be530f", "nic-11633301eec"). A reader of a hand-off record an
// earlier release wrote looks for them where the current names are absent.
func LegacyBridge(pod string) string {
	return shortForm("bridge", BridgePrefix, pod, BridgePrefix+pod)
}

// LegacyNIC: see [LegacyBridge].
func LegacyNIC(pod string) string { return shortForm("nic", nicPrefix, pod, pod+NICSuffix) }

// BridgeLinkLocal is the bridge binding's link-local address for the
// interface at index i of spec.domain.devices.interfaces, as KubeVirt
// forms it: "169.254.75.1" followed by i in decimal (i=0 → .10, i=9 → .19,
// i=10 → .110, i=99 → .199). KubeVirt's form runs out at i=100; from there
// on the addresses continue at 169.254.76.0.
func BridgeLinkLocal(i int) netip.Prefix {
	var a netip.Addr
	switch {
	case i < 0:
		panic(fmt.Sprintf("names: negative interface index %d", i))
	case i < 10:
		a = netip.AddrFrom4([4]byte{169, 254, 75, byte(10 + i)})
	case i < 100:
		a = netip.AddrFrom4([4]byte{169, 254, 75, byte(100 + i)})
	default:
		n := i - 100
		a = netip.AddrFrom4([4]byte{169, 254, byte(76 + n/256), byte(n % 256)})
	}
	return netip.PrefixFrom(a, 32)
}

// MasqueradeBridgeMAC is the MAC of the masquerade bridge
// (api.MasqueradeBridgeMAC names it for users): a derived VM MAC never is
// it.
const MasqueradeBridgeMAC = "02:00:00:00:00:00"

// VMMAC derives a stable MAC for a VM interface from the VMI UID and the
// interface name: SHA-256 of "<uid>/<iface>", first six bytes, with the
// locally-administered bit set and the multicast bit cleared. The first
// octet is never 0xfe (libvirt gives the host side of a tap the VM's MAC
// with its first octet replaced by 0xfe, and KubeVirt avoids it for VMs):
// a digest starting with 0xfe or 0xff becomes 0xfa. It is never
// [MasqueradeBridgeMAC].
func VMMAC(uid, iface string) net.HardwareAddr {
	sum := sha256.Sum256([]byte(uid + "/" + iface))
	mac := append(net.HardwareAddr(nil), sum[:6]...)
	mac[0] = (mac[0] &^ 0x01) | 0x02
	if mac[0] == 0xfe {
		mac[0] = 0xfa
	}
	if mac.String() == MasqueradeBridgeMAC {
		mac[5] = 1
	}
	return mac
}

// BridgeMAC derives the bridge binding's bridge MAC (which the pod NIC
// takes over) from the VMI UID and interface name, like [VMMAC] but from
// a different input, so that re-runs set the same MAC. KubeVirt v0.53 lets
// the kernel pick a random one.
func BridgeMAC(uid, iface string) net.HardwareAddr { return VMMAC(uid, "bridge/"+iface) }
