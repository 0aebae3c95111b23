package phase2

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

// checkRecord checks the values of an interface record that phase2 renders
// into the domain or hands to the DHCP server: link names as phase1 makes
// them, a 6-byte unicast MAC, an MTU of 68-65535, addresses and prefixes
// of the right family, routes, a PCI address. Empty values are not checked
// (a binding leaves unset what it does not use). It returns the first
// problem as an [*InvalidRecordError].
func checkRecord(path string, rec *cache.Interface) error {
	bad := func(field, value, reason string) error {
		return &InvalidRecordError{Interface: rec.Interface, Path: path, Field: field, Value: value, Reason: reason}
	}
	for _, l := range []struct{ field, name string }{
		{"bridge", rec.Bridge}, {"tap", rec.Tap}, {"nic", rec.NIC}, {"target", rec.Target},
	} {
		if l.name != "" {
			if err := names.CheckLinkName(l.name); err != nil {
				return bad(l.field, l.name, "not a link name: "+err.Error())
			}
		}
	}
	if rec.MAC != "" {
		hw, err := net.ParseMAC(rec.MAC)
		switch {
		case err != nil || len(hw) != 6:
			return bad("mac", rec.MAC, "not a 48-bit MAC address")
		case hw[0]&1 == 1:
			return bad("mac", rec.MAC, "multicast MAC address")
		case hw.String() == "00:00:00:00:00:00":
			return bad("mac", rec.MAC, "all-zero MAC address")
		}
	}
	if rec.MTU != 0 && (rec.MTU < 68 || rec.MTU > 65535) {
		return bad("mtu", strconv.Itoa(rec.MTU), "outside 68-65535")
	}
	if rec.Ifindex < 0 || rec.Ifindex > 1<<31-1 {
		return bad("ifindex", strconv.Itoa(rec.Ifindex), "not an interface index")
	}
	if rec.Queues < 0 || rec.Queues > api.MaxQueues {
		return bad("queues", strconv.Itoa(rec.Queues), fmt.Sprintf("outside 0-%d", api.MaxQueues))
	}
	for _, p := range []struct {
		field, value string
		ipv6         bool
	}{{"ipv4", rec.IPv4, false}, {"ipv6", rec.IPv6, true}} {
		if p.value == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(p.value)
		if err != nil || !sameFamily(pfx.Addr(), p.ipv6) {
			return bad(p.field, p.value, "not an "+family(p.ipv6)+" address with prefix")
		}
	}
	for _, a := range []struct {
		field, value string
		ipv6         bool
	}{
		{"gateway", rec.Gateway, false}, {"serverIPv4", rec.ServerIPv4, false},
		{"gatewayIPv6", rec.GatewayIPv6, true}, {"serverIPv6", rec.ServerIPv6, true},
	} {
		if a.value == "" {
			continue
		}
		addr, err := netip.ParseAddr(a.value)
		if err != nil || !sameFamily(addr, a.ipv6) {
			return bad(a.field, a.value, "not an "+family(a.ipv6)+" address")
		}
	}
	for i, r := range rec.Routes {
		f := fmt.Sprintf("routes[%d]", i)
		dst, err := netip.ParsePrefix(r.Dst)
		if err != nil {
			return bad(f+".dst", r.Dst, "not a CIDR")
		}
		for _, a := range []struct{ field, value string }{{"gateway", r.Gateway}, {"src", r.Src}} {
			if a.value == "" {
				continue
			}
			addr, err := netip.ParseAddr(a.value)
			if err != nil || addr.Is4() != dst.Addr().Is4() {
				return bad(f+"."+a.field, a.value, "not an address of the family of "+r.Dst)
			}
		}
		if r.Metric < 0 {
			return bad(f+".metric", strconv.Itoa(r.Metric), "negative")
		}
	}
	return nil
}

func sameFamily(a netip.Addr, ipv6 bool) bool {
	if ipv6 {
		return a.Is6() && !a.Is4In6()
	}
	return a.Is4()
}

func family(ipv6 bool) string {
	if ipv6 {
		return "IPv6"
	}
	return "IPv4"
}
