package phase2

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

// checkRecord checks what the types of an interface record's values do
// not (cache refuses a value that is not an address, a prefix or a MAC
// when it reads the record): link names as phase1 makes them, a unicast
// MAC, an MTU of 68-65535, addresses of the right family, route gateways
// of their destination's family. Unset values are not checked (a binding
// leaves unset what it does not use). It returns the first problem as an
// [ErrInvalidRecord] error.
func checkRecord(path string, rec *cache.Interface) error {
	bad := func(field, value, reason string) error {
		return invalidRecord(rec.Interface, path, field, value, reason)
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
	if hw := rec.MAC.HardwareAddr(); hw != nil {
		switch {
		case hw[0]&1 == 1:
			return bad("mac", hw.String(), "multicast MAC address")
		case hw.String() == "00:00:00:00:00:00":
			return bad("mac", hw.String(), "all-zero MAC address")
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
		field string
		value netip.Prefix
		ipv6  bool
	}{{"ipv4", rec.IPv4, false}, {"ipv6", rec.IPv6, true}} {
		if p.value.IsValid() && !sameFamily(p.value.Addr(), p.ipv6) {
			return bad(p.field, p.value.String(), "not an "+family(p.ipv6)+" address with prefix")
		}
	}
	for _, a := range []struct {
		field string
		value netip.Addr
		ipv6  bool
	}{
		{"gateway", rec.Gateway, false}, {"serverIPv4", rec.ServerIPv4, false},
		{"gatewayIPv6", rec.GatewayIPv6, true}, {"serverIPv6", rec.ServerIPv6, true},
	} {
		if a.value.IsValid() && !sameFamily(a.value, a.ipv6) {
			return bad(a.field, a.value.String(), "not an "+family(a.ipv6)+" address")
		}
	}
	for i, r := range rec.Routes {
		f := fmt.Sprintf("routes[%d]", i)
		if !r.Dst.IsValid() {
			return bad(f+".dst", "", "not a CIDR")
		}
		for _, a := range []struct {
			field string
			value netip.Addr
		}{{"gateway", r.Gateway}, {"src", r.Src}} {
			if a.value.IsValid() && a.value.Is4() != r.Dst.Addr().Is4() {
				return bad(f+"."+a.field, a.value.String(), "not an address of the family of "+r.Dst.String())
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
