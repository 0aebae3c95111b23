package deviceplugin

import (
	"context"
	"net"
	"slices"
	"strings"
)

// Link is what discovery needs to know about a host link.
type Link struct {
	// Name is the interface name.
	Name string
	// Kind is the rtnetlink IFLA_INFO_KIND ("veth", "bridge", "macvtap",
	// "bond", …); physical NICs have none and report "".
	Kind string
	// EncapType is the link-layer type as iproute2 names it ("ether",
	// "loopback", "none", …).
	EncapType string
	// Flags are the interface flags (net.FlagLoopback matters here).
	Flags net.Flags
	// MasterIndex is the ifindex of the bridge or bond this link is
	// enslaved to, 0 when none.
	MasterIndex int
}

// LinkLister lists the links of the host network namespace. [NetlinkLister]
// is the real implementation; tests use a slice.
type LinkLister interface {
	Links(ctx context.Context) ([]Link, error)
}

// LinkListerFunc adapts a function to [LinkLister].
type LinkListerFunc func(ctx context.Context) ([]Link, error)

// Links implements [LinkLister].
func (f LinkListerFunc) Links(ctx context.Context) ([]Link, error) { return f(ctx) }

// SuitableLowerDevice reports whether l can carry macvtaps and should get a
// resource of its own when the configuration is "[]": a physical NIC (no
// link kind) or a bond, not loopback, Ethernet, and not enslaved to a bridge
// or bond (a port's frames belong to its master, and the kernel refuses a
// macvtap on it). kubevirt/macvtap-cni keeps physical links and bonds minus
// loopback; the Ethernet and enslaved checks are this project's additions.
func SuitableLowerDevice(l Link) bool {
	if l.Flags&net.FlagLoopback != 0 || l.MasterIndex != 0 {
		return false
	}
	if l.EncapType != "" && l.EncapType != "ether" {
		return false
	}
	return l.Kind == "" || l.Kind == "bond"
}

// Discover returns one [DefaultResource] per suitable host link (see
// [SuitableLowerDevice]), sorted by name. Links whose names are not valid
// resource names are skipped.
func Discover(ctx context.Context, lister LinkLister) ([]Resource, error) {
	links, err := lister.Links(ctx)
	if err != nil {
		return nil, err
	}
	var out []Resource
	for _, l := range links {
		if !SuitableLowerDevice(l) || len(l.Name) > maxResourceNameLen || !resourceNameRE.MatchString(l.Name) {
			continue
		}
		out = append(out, DefaultResource(l.Name))
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Resources returns the resources to advertise: conf as parsed by
// [ParseConfig] when it has entries, else the result of [Discover].
func Resources(ctx context.Context, conf []Resource, lister LinkLister) ([]Resource, error) {
	if len(conf) > 0 {
		return slices.Clone(conf), nil
	}
	return Discover(ctx, lister)
}
