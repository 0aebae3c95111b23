package kernel

import (
	"errors"

	"github.com/virtnet/virtnet/netdriver"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AddrListFlags is [Netlink.AddrList] with each address's flags (`ip addr
// show dev NAME`), in the kernel's order: addresses of universe (global)
// scope, from one dump of the link's addresses.
func (n *Netlink) AddrListFlags(name string, family netdriver.Family) ([]netdriver.FlaggedAddr, error) {
	var out []netdriver.FlaggedAddr
	err := n.set(name, "list addresses", func(l netlink.Link) (err error) {
		out, err = n.linkAddrs(l.Attrs().Index, nlFamily(family))
		return err
	})
	return out, err
}

// AddrReplaceFlags is `ip addr replace PREFIX dev NAME` with exactly the
// settable flags of a.Flags ([netdriver.SettableAddrFlags]; an IPv6 address without
// nodad goes through duplicate address detection again).
func (n *Netlink) AddrReplaceFlags(name string, a netdriver.FlaggedAddr) error {
	return n.set(name, "replace address "+a.Prefix.String(), func(l netlink.Link) error {
		return n.h.AddrReplace(l, &netlink.Addr{IPNet: ipNet(a.Prefix), Flags: int(a.Flags & netdriver.SettableAddrFlags)})
	})
}

// RouteDel is `ip route del DST dev LINK metric M [proto kernel]` in the
// main table; a missing route is not an error.
func (n *Netlink) RouteDel(r netdriver.Route) error {
	err := n.set(r.Link, "delete route "+r.Dst.String(), func(l netlink.Link) error {
		nr := nlRoute(l, r)
		nr.Table = unix.RT_TABLE_MAIN
		if r.Kernel {
			nr.Protocol = unix.RTPROT_KERNEL
		}
		if r.Dst.Addr().Is6() {
			nr.Family = unix.AF_INET6
		} else {
			nr.Family = unix.AF_INET
		}
		return n.h.RouteDel(nr)
	})
	if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}
