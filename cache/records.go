package cache

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
)

// Version is the schema version of every record this package writes.
// The package reads its own version and the one before it
// ([MinReadVersion]): after an upgrade, phase1 and Cleanup find the
// records of VMIs an older release prepared (a CNI DEL on a node whose
// plugin was upgraded while the pod ran). A version is raised only for a
// change the older release would misread; the previous version's records
// stay in testdata/records (TestReadsPreviousVersion).
const Version = 1

// MinReadVersion is the oldest record schema version this package reads.
const MinReadVersion = 1

// State is how far phase1 got with one interface.
type State int

// The states, in order. A record that was never written is Pending.
const (
	Pending State = iota
	Started
	Finished
)

var stateNames = [...]string{"pending", "started", "finished"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalJSON writes the state's name.
func (s State) MarshalJSON() ([]byte, error) {
	if s < 0 || int(s) >= len(stateNames) {
		return nil, fmt.Errorf("cache: invalid state %d", int(s))
	}
	return json.Marshal(s.String())
}

// UnmarshalJSON reads a state's name.
func (s *State) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	i := slices.Index(stateNames[:], name)
	if i < 0 {
		return fmt.Errorf("unknown state %q", name)
	}
	*s = State(i)
	return nil
}

// Route is a route of the pod interface. Dst is a CIDR ("0.0.0.0/0" for
// the default route); Gateway and Src are addresses or the zero Addr
// (not written).
type Route struct {
	Dst     netip.Prefix `json:"dst"`
	Gateway netip.Addr   `json:"gateway,omitzero"`
	Src     netip.Addr   `json:"src,omitzero"`
	Metric  int          `json:"metric,omitempty"`
	// Kernel marks the route the kernel derives from an address (proto
	// kernel): it comes back with the address and is not restored.
	Kernel bool `json:"kernel,omitempty"`
}

// Link is a pod interface as phase1 found it, before changing anything:
// what a re-run resumes from and what [Cleanup] restores.
type Link struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// MAC is the link's MAC; the zero MAC (written "") when its
	// link-layer address is none or not a 48-bit MAC (an L3 tunnel,
	// IPoIB), which phase1 then neither uses nor restores.
	MAC MAC `json:"mac"`
	MTU int `json:"mtu"`
	// Ifindex is the link's index in the pod namespace, when a binding
	// needs it (macvtap: QEMU's /dev/tap<ifindex>).
	Ifindex int `json:"ifindex,omitempty"`
	// Addresses are the link's global addresses with their prefix
	// length (host bits kept: "10.244.1.7/24"), IPv4 first.
	Addresses []netip.Prefix `json:"addresses,omitempty"`
	// AddressFlags are the settable IFA_F_* flags of the addresses that
	// have any (0x02 nodad, 0x200 noprefixroute, …), by CIDR, so that a
	// restore gives them back as they were; an address not listed has
	// none (the kernel's own state flags, such as permanent, are not
	// recorded).
	AddressFlags map[netip.Prefix]uint32 `json:"addressFlags,omitempty"`
	// Routes are the link's IPv4 and IPv6 routes in the main table.
	Routes []Route `json:"routes,omitempty"`
	// RouterIPv6 is the link-local address of the router the link's IPv6
	// default route goes through (the gateway itself when it is
	// link-local, else the link-local address phase1 found it answers
	// to), when a binding needs it (bridge: the guest's IPv6 router).
	RouterIPv6 netip.Addr `json:"routerIPv6,omitzero"`
}

// Progress is phase1's progress on one VMI interface and what it
// discovered. KubeVirt keeps the same state in
// network-info-cache/<uid>/<iface>.
type Progress struct {
	Version int `json:"version"`
	// Interface is the VMI interface name, Network its network.
	Interface string `json:"interface"`
	Network   string `json:"network"`
	// PodInterface is the pod's link for this network (eth0, net1, …).
	PodInterface string `json:"podInterface"`
	Binding      string `json:"binding"`
	State        State  `json:"state"`
	// PodIPs are the pod interface's first global IPv4 and IPv6
	// addresses (without prefix), the pod's primary family first (see
	// phase1.Options.PrimaryPodIP): what the VMI status shows.
	PodIPs []netip.Addr `json:"podIPs,omitempty"`
	// Discovered is the pod link as found on the first run.
	Discovered *Link `json:"discovered,omitempty"`
}

// Interface is what phase2 and the DHCP server need for one VMI interface
// and cannot recompute without privileges. KubeVirt splits it between
// vif-cache-<podIface>.json and interface-cache-<iface>.json.
type Interface struct {
	Version      int    `json:"version"`
	Interface    string `json:"interface"`
	PodInterface string `json:"podInterface"`
	Binding      string `json:"binding"`

	// Bridge and Tap are the in-pod bridge and the VM's tap (bridge and
	// masquerade); NIC is the renamed pod link (bridge with IPAM).
	Bridge string `json:"bridge,omitempty"`
	Tap    string `json:"tap,omitempty"`
	NIC    string `json:"nic,omitempty"`
	// Target is the device libvirt attaches the VM to when it is not a
	// tap of ours (macvtap: the macvtap link's name).
	Target string `json:"target,omitempty"`
	// Ifindex is the target link's index in the pod namespace (macvtap).
	Ifindex int `json:"ifindex,omitempty"`

	// MAC is the VM's MAC address; MTU the VM's: the pod link's, or the
	// smaller clamp of api.GuestMTUAnnotation (masquerade).
	MAC MAC `json:"mac,omitzero"`
	MTU int `json:"mtu,omitempty"`
	// Queues is the tap's queue count (0: single queue).
	Queues int `json:"queues,omitempty"`

	// IPAMDisabled is set when the pod link had no IPv4 address: the VM
	// gets layer 2 only and no DHCP server runs.
	IPAMDisabled bool `json:"ipamDisabled,omitempty"`
	// IPv4 and IPv6 are the VM's addresses with their prefix length
	// (host bits kept: "10.244.1.7/24").
	IPv4 netip.Prefix `json:"ipv4,omitzero"`
	IPv6 netip.Prefix `json:"ipv6,omitzero"`
	// Gateway and GatewayIPv6 are the VM's default routers.
	Gateway     netip.Addr `json:"gateway,omitzero"`
	GatewayIPv6 netip.Addr `json:"gatewayIPv6,omitzero"`
	// ServerIPv4 is the DHCP server's identifier address (the bridge's
	// link-local address for bridge, the gateway for masquerade);
	// ServerIPv6 the DHCPv6/RA source.
	ServerIPv4 netip.Addr `json:"serverIPv4,omitzero"`
	ServerIPv6 netip.Addr `json:"serverIPv6,omitzero"`
	// Routes are the routes the VM gets over DHCP option 121.
	Routes []Route `json:"routes,omitempty"`
	// RouterIPv6 is the link-local address router advertisements name as
	// the VM's IPv6 default router when it is not the server itself
	// (bridge: the CNI's gateway, reached across the bridge).
	RouterIPv6 netip.Addr `json:"routerIPv6,omitzero"`
	// OnLinkIPv6 is the IPv6 prefix the pod had on-link (its connected
	// route), advertised as on-link and not for SLAAC; the zero Prefix
	// advertises none (bridge).
	OnLinkIPv6 netip.Prefix `json:"onLinkIPv6,omitzero"`
}

type versioned interface{ version() int }

func (r *Progress) version() int  { return r.Version }
func (r *Interface) version() int { return r.Version }
