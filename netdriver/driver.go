package netdriver

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/virtnet/virtnet/internal/errclass"
)

// Link types as [Link.Type] reports them (the kernel's rtnetlink kinds;
// "device" is a link without a kind, e.g. a physical NIC or loopback).
const (
	TypeBridge  = "bridge"
	TypeDummy   = "dummy"
	TypeTuntap  = "tuntap"
	TypeVeth    = "veth"
	TypeMacvtap = "macvtap"
	TypeDevice  = "device"
)

// Link is the state of one link.
type Link struct {
	Name  string
	Index int
	Type  string
	MAC   net.HardwareAddr
	MTU   int
	// Master is the name of the bridge the link is enslaved to, or "".
	Master string
	Up     bool
	// NoARP reports IFF_NOARP.
	NoARP bool
	// TapOwner, TapGroup and TapMultiQueue describe a tap (-1 when unset).
	TapOwner, TapGroup int
	TapMultiQueue      bool
	// MacvtapMode is the mode of a macvtap ("bridge", "vepa", …).
	MacvtapMode string
	// AltNames are the link's alternative names (IFLA_PROP_LIST); phase1
	// marks the links it creates with one.
	AltNames []string
}

// Route is one route in the main table.
type Route struct {
	Dst      netip.Prefix
	Gateway  netip.Addr
	Src      netip.Addr
	Link     string
	Priority int
	// Kernel marks a route the kernel added for an address (proto
	// kernel); it comes back by itself when the address does.
	Kernel bool
}

// Family selects IPv4 or IPv6.
type Family int

// The address families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

// Tap describes a tap to create.
type Tap struct {
	Name         string
	Owner, Group int
	// MultiQueue creates the tap with IFF_MULTI_QUEUE so that QEMU can
	// attach several queues.
	MultiQueue bool
	MTU        int
}

// Driver is the kernel seam of phase1, bound to one network namespace.
// Names are link names inside that namespace.
type Driver interface {
	// LinkByName returns a link or a *LinkNotFoundError.
	LinkByName(name string) (*Link, error)
	// LinkList returns every link of the namespace.
	LinkList() ([]*Link, error)

	// AddBridge is `ip link add NAME type bridge` with the given MTU
	// (0: kernel default) and MAC (nil: random).
	AddBridge(name string, mtu int, mac net.HardwareAddr) error
	// AddDummy is `ip link add NAME type dummy`.
	AddDummy(name string) error
	// AddTap is `ip tuntap add NAME mode tap user U group G [multi_queue]`
	// followed by `ip link set NAME mtu M`.
	AddTap(tap Tap) error
	// DeleteLink is `ip link del NAME`; a missing link is not an error.
	DeleteLink(name string) error

	// SetName is `ip link set OLD name NEW` (the link must be down).
	SetName(old, new string) error
	// SetUp is `ip link set NAME up`.
	SetUp(name string) error
	// SetDown is `ip link set NAME down`.
	SetDown(name string) error
	// SetMAC is `ip link set NAME address MAC`.
	SetMAC(name string, mac net.HardwareAddr) error
	// SetMTU is `ip link set NAME mtu MTU`.
	SetMTU(name string, mtu int) error
	// SetMaster is `ip link set NAME master BRIDGE` (`nomaster` for "").
	SetMaster(name, bridge string) error
	// Learning reports the bridge-port learning flag of an enslaved
	// link (`bridge -d link show dev NAME`).
	Learning(name string) (bool, error)
	// SetLearning is `bridge link set dev NAME learning on|off`.
	SetLearning(name string, on bool) error
	// AddAltName is `ip link property add dev NAME altname ALT` (at most
	// [MaxAltName] bytes; an alternative name is unique in the namespace
	// and follows the link through renames).
	AddAltName(name, alt string) error

	// AddrList returns the link's global addresses of a family.
	AddrList(name string, family Family) ([]netip.Prefix, error)
	// AddrOwners returns the links holding addr (`ip -o addr show to
	// ADDR`), in one dump of the namespace's addresses.
	AddrOwners(addr netip.Addr) ([]string, error)
	// AddrReplace is `ip addr replace PREFIX dev NAME`.
	AddrReplace(name string, addr netip.Prefix) error
	// AddrDel is `ip addr del PREFIX dev NAME`; a missing address is not
	// an error.
	AddrDel(name string, addr netip.Prefix) error

	// AddrListFlags is AddrList with each address's IFA_F_* flags, in the
	// kernel's order: what an exact restore of a pod link records.
	AddrListFlags(name string, family Family) ([]FlaggedAddr, error)
	// AddrReplaceFlags is `ip addr replace PREFIX dev NAME` with exactly
	// the settable flags of a.Flags ([SettableAddrFlags]; an IPv6 address
	// without nodad goes through duplicate address detection again).
	AddrReplaceFlags(name string, a FlaggedAddr) error

	// RouteList returns the link's routes of a family in the main table.
	RouteList(name string, family Family) ([]Route, error)
	// RouteReplace is `ip route replace DST [via GW] [src SRC] dev LINK`.
	RouteReplace(r Route) error
	// RouteDel is `ip route del DST dev LINK metric M [proto kernel]` in
	// the main table (a kernel route too: the prefix route an address
	// brings); a missing route is not an error.
	RouteDel(r Route) error

	// Sysctl reads a sysctl under /proc/sys/net ("ipv4/ip_forward").
	Sysctl(key string) (string, error)
	// SetSysctl writes a sysctl under /proc/sys/net.
	SetSysctl(key, value string) error

	// TXChecksum reports whether TX checksum offload is on
	// (`ethtool -k NAME tx`).
	TXChecksum(name string) (bool, error)
	// SetTXChecksum is `ethtool -K NAME tx on|off`.
	SetTXChecksum(name string, on bool) error

	// ApplyNAT makes the namespace's virtnet NAT table of nat.Family hold
	// exactly the rules of nat (replacing what was there, atomically).
	ApplyNAT(nat NAT) error
	// DeleteNAT removes the virtnet NAT table of a family; a missing
	// table is not an error.
	DeleteNAT(family Family) error
	// NATRules returns a readable, stable listing of the virtnet NAT
	// table of a family, one rule a line (nil when there is no table).
	NATRules(family Family) ([]string, error)
}

// NATPort is a port forwarded to the VM.
type NATPort struct {
	Protocol string // "tcp" or "udp"
	Port     uint16
}

// NAT is the masquerade binding's rule set for one address family, after
// KubeVirt's (see the masquerade binding's doc).
type NAT struct {
	Family Family
	// PodInterface is where traffic enters and leaves the pod (eth0);
	// Bridge is the VM's bridge (k6t-eth0).
	PodInterface string
	Bridge       string
	// VM and Gateway are the VM's address and the bridge's.
	VM      netip.Addr
	Gateway netip.Addr
	// Ports are forwarded to the VM; none forwards every port.
	Ports []NATPort
	// MigrationPorts are libvirt's migration ports from loopback that
	// must not be forwarded (49152, 49153); none when the VMI migrates
	// over a unix socket.
	MigrationPorts []uint16
	// Proxy is set when a sidecar proxy (Istio's Envoy) shares the pod:
	// see [NATProxy].
	Proxy *NATProxy
}

// NATProxy is what the rule set needs to know of a sidecar proxy in the
// pod, after KubeVirt v0.53's Istio rules: inbound traffic reaches the
// proxy, which connects to the workload from Source to PodAddress; only
// NonProxiedPorts are DNAT-ed to the VM from outside.
type NATProxy struct {
	// Source is the proxy's passthrough source address (127.0.0.6 for
	// Istio), SNAT-ed to the gateway like loopback; IPv4 only, invalid
	// for none.
	Source netip.Addr
	// PodAddress is the pod's address, DNAT-ed to the VM in the output
	// chain; IPv4 only, invalid for none.
	PodAddress netip.Addr
	// ReservedPorts are the proxy's own ports: without declared ports,
	// connections to them from loopback stay in the pod.
	ReservedPorts []uint16
	// NonProxiedPorts are DNAT-ed (TCP) from outside straight to the VM.
	NonProxiedPorts []uint16
}

// MaxAltName is the longest alternative name of a link (ALTIFNAMSIZ - 1).
const MaxAltName = 127

// NATTable is the name of the nftables table virtnet owns in each family.
const NATTable = "virtnet_nat"

// LinkNotFoundError is returned for a link that does not exist.
type LinkNotFoundError struct{ Name string }

func (e *LinkNotFoundError) Error() string { return fmt.Sprintf("link %q not found", e.Name) }

// Is makes LinkNotFoundError match [ErrLinkNotFound].
func (e *LinkNotFoundError) Is(target error) bool { return target == ErrLinkNotFound }

// ErrLinkNotFound is matched by every [*LinkNotFoundError].
var ErrLinkNotFound = errors.New("link not found")

// ErrNotSupported is returned by the real driver on systems other than
// Linux.
var ErrNotSupported = errclass.ErrNotSupported

// IsLinkNotFound reports whether err says a link does not exist.
func IsLinkNotFound(err error) bool { return errors.Is(err, ErrLinkNotFound) }

// SysctlPath maps a key under /proc/sys/net to its file, refusing keys
// that would leave that directory.
func SysctlPath(key string) (string, error) {
	clean := filepath.Clean("/" + key)
	if key == "" || strings.Contains(key, "..") || clean != "/"+key {
		return "", fmt.Errorf("sysctl key %q is not a path under /proc/sys/net", key)
	}
	return "/proc/sys/net" + clean, nil
}
