package dhcp

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

// InfiniteLease is the lease time the VM gets: KubeVirt's 999 days, which
// guests treat as "never renew".
const InfiniteLease = 999 * 24 * time.Hour

// Defaults used when the pod's resolv.conf names no IPv4 nameserver or no
// search domain (KubeVirt's).
var (
	defaultDNS    = netip.AddrFrom4([4]byte{8, 8, 8, 8})
	defaultSearch = "cluster.local"
)

// Route is one classless static route (DHCP option 121). A zero Gateway
// (0.0.0.0) means the destination is on-link.
type Route struct {
	Dst     netip.Prefix
	Gateway netip.Addr
}

// PrivateOption is a DHCP option in the site-specific range 224–254 with
// its raw value.
type PrivateOption struct {
	Code  uint8
	Value string
}

// Config6 is what the DHCPv6 server and router advertisements hand out.
type Config6 struct {
	// Address is the VM's address with the on-link prefix
	// (fd10:0:2::2/120).
	Address netip.Prefix
	// Gateway is the VM's router address (fd10:0:2::1), informational:
	// router advertisements come from the bridge's link-local address.
	Gateway netip.Addr
	// Server is the address the record names for DHCPv6/RA (may be zero).
	Server netip.Addr
	// DNS are the pod's IPv6 nameservers (DHCPv6 option 23, RDNSS in
	// router advertisements); none are invented when the pod has none.
	// The search list is the IPv4 one, [Config.Search].
	DNS []netip.Addr
	// Shared is set when the bridge also carries the pod's other side
	// (bridge binding: Service.RequireMAC): the bridge is not the VM's
	// router. Router advertisements then go as Ethernet frames to the
	// VM's MAC alone (never to the pod's network), from Router, naming
	// it as the default router, or, without Router, from the bridge's
	// link-local address with a router lifetime of zero; they advertise
	// OnLink as the on-link prefix, or none.
	Shared bool
	// Router is the link-local address of the VM's default router when
	// Shared (bridge: the CNI's gateway across the bridge); zero: none.
	Router netip.Addr
	// OnLink is the prefix advertised as on-link (not for SLAAC) when
	// Shared; zero advertises none. When not Shared the prefix of
	// Address is advertised.
	OnLink netip.Prefix
}

// Config is everything one single-client DHCP server serves, computed once
// by [NewConfigFor]. It is plain data: tests build it directly.
type Config struct {
	// Interface is the VMI interface name, for logs.
	Interface string
	// Bridge is the in-pod bridge the server binds to (k6t-eth0).
	Bridge string
	// MAC is the only client answered; nil answers any client.
	MAC net.HardwareAddr

	// Address is the VM's IPv4 address with its prefix (option 1 is the
	// mask); Router the default gateway (option 3, zero: none);
	// ServerID the server identifier (option 54).
	Address  netip.Prefix
	Router   netip.Addr
	ServerID netip.Addr
	// MTU is option 26 (0: not sent).
	MTU uint16
	// Lease is option 51.
	Lease time.Duration

	// DNS (option 6: the IPv4 nameservers) and Search (option 119, and
	// DHCPv6 option 24 and DNSSL for IPv6) come from resolv.conf;
	// DomainName (option 15) is the longest search domain.
	DNS        []netip.Addr
	Search     []string
	DomainName string
	// Hostname is option 12 ("" not sent).
	Hostname string
	// Routes is option 121 (nil: not sent), default routes last.
	Routes []Route

	// From the interface's dhcpOptions: options 66, 67, 42 and 224–254.
	TFTPServerName string
	BootFileName   string
	NTPServers     []netip.Addr
	Private        []PrivateOption

	// IPv6 is set for masquerade with an IPv6 address: DHCPv6 and router
	// advertisements run too.
	IPv6 *Config6

	// Ignored lists inputs that were dropped rather than refused (an
	// invalid search domain, an IPv6 route); [Server.Serve] logs them.
	Ignored []string
}

// Service is what the server offers (binding.DHCPService, which the
// launcher gets from the interface's binding).
type Service struct {
	// IPv4 serves DHCPv4; IPv6 serves DHCPv6 and router advertisements.
	IPv4, IPv6 bool
	// RequireMAC makes the record's MAC required: the server answers the
	// VM only.
	RequireMAC bool
}

// NewConfigFor builds the configuration of the DHCP server offering svc
// for one interface from the VMI (hostname, subdomain, name), the
// interface (its dhcpOptions; may be nil), the phase1 cache record and the
// content of the pod's resolv.conf (read by the caller, usually
// /etc/resolv.conf inside the pod; nil means empty and yields KubeVirt's
// defaults).
//
// It returns [ErrIPAMDisabled] when there is no address to serve (no IPv4
// address, and no IPv6 one when svc serves IPv6), and a [*FieldError]
// naming the field for any other bad input. A record with IPv6 only (a
// single-stack IPv6 pod on masquerade) gets DHCPv6 and router
// advertisements alone; an IPv6 address svc does not serve is listed in
// [Config.Ignored].
func NewConfigFor(vmi *api.VMI, iface *api.Interface, rec *cache.Interface, resolvConf []byte, svc Service) (*Config, error) {
	if rec == nil {
		return nil, &FieldError{Field: "record", Value: "<nil>", Reason: "a cache record is required"}
	}
	if !svc.IPv4 && !svc.IPv6 {
		return nil, &FieldError{Field: "Service", Value: "none", Reason: "neither DHCPv4 nor DHCPv6 asked for"}
	}
	serve4 := svc.IPv4 && rec.IPv4.IsValid()
	v6only := !serve4 && rec.IPv6.IsValid() && svc.IPv6
	if rec.IPAMDisabled || (!serve4 && !v6only) {
		return nil, fmt.Errorf("interface %q: %w", rec.Interface, ErrIPAMDisabled)
	}
	if rec.Bridge == "" {
		return nil, &FieldError{Field: "Bridge", Value: "", Reason: "the bridge to serve on is required"}
	}
	c := &Config{Interface: rec.Interface, Bridge: rec.Bridge, Lease: InfiniteLease}

	if rec.MAC.IsValid() {
		c.MAC = rec.MAC.HardwareAddr()
	} else if svc.RequireMAC {
		return nil, &FieldError{Field: "MAC", Value: "", Reason: "the VM's MAC is required (the server answers the VM only)"}
	}
	if !v6only {
		if err := c.ipv4(rec); err != nil {
			return nil, err
		}
	}
	if rec.MTU != 0 {
		if rec.MTU < 68 || rec.MTU > 65535 {
			return nil, &FieldError{Field: "MTU", Value: fmt.Sprint(rec.MTU), Reason: "not between 68 and 65535"}
		}
		c.MTU = uint16(rec.MTU)
	}

	rc := ParseResolvConf(resolvConf)
	var dns6 []netip.Addr
	for _, a := range rc.Nameservers {
		if a.Is4() {
			c.DNS = append(c.DNS, a)
		} else {
			dns6 = append(dns6, a)
		}
	}
	if len(c.DNS) == 0 {
		c.DNS = []netip.Addr{defaultDNS}
	}
	search := rc.Search
	if len(search) == 0 {
		search = []string{defaultSearch}
	}
	if vmi != nil {
		search = WithSubdomain(search, vmi.Spec.Subdomain)
		c.Hostname = vmi.Hostname()
	}
	for _, d := range search {
		if err := checkDomain(d); err != nil {
			c.Ignored = append(c.Ignored, fmt.Sprintf("resolv.conf search domain %q: %v", d, err))
			continue
		}
		c.Search = append(c.Search, d)
	}
	if n := len(searchBytes(c.Search)); n > 255 {
		return nil, &FieldError{Field: "resolv.conf search", Value: strings.Join(c.Search, " "),
			Reason: fmt.Sprintf("encodes to %d bytes, over the 255 of one DHCP option", n)}
	}
	if len(c.Search) > 0 { // the longest, the first of equals
		c.DomainName = slices.MaxFunc(c.Search, func(a, b string) int { return cmp.Compare(len(a), len(b)) })
	}

	if iface != nil && iface.DHCPOptions != nil {
		if err := c.dhcpOptions(iface.DHCPOptions); err != nil {
			return nil, err
		}
	}

	if rec.IPv6.IsValid() {
		var err error
		if !svc.IPv6 {
			c.Ignored = append(c.Ignored, fmt.Sprintf("IPv6 %q: the %s binding asks for no DHCPv6", rec.IPv6, rec.Binding))
		} else if c.IPv6, err = newConfig6(rec, dns6, svc.RequireMAC); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ipv4 fills the DHCPv4 part: address, router, server identifier, routes.
func (c *Config) ipv4(rec *cache.Interface) error {
	if c.Address = rec.IPv4; !c.Address.Addr().Is4() {
		return &FieldError{Field: "IPv4", Value: rec.IPv4.String(), Reason: "not an IPv4 address with prefix (a.b.c.d/len)"}
	}
	if rec.Gateway.IsValid() {
		if c.Router = rec.Gateway; !c.Router.Is4() {
			return &FieldError{Field: "Gateway", Value: rec.Gateway.String(), Reason: "not an IPv4 address"}
		}
	}
	if c.ServerID = rec.ServerIPv4; !c.ServerID.Is4() {
		return &FieldError{Field: "ServerIPv4", Value: rec.ServerIPv4.String(), Reason: "not an IPv4 address"}
	}
	var err error
	c.Routes, err = c.routes(rec.Routes)
	return err
}

// HasIPv4 reports whether the configuration serves DHCPv4 (it does unless
// the pod is single-stack IPv6).
func (c *Config) HasIPv4() bool { return c.Address.IsValid() }

// newConfig6 is the IPv6 part, with the pod's IPv6 nameservers dns and
// shared for [Config6.Shared].
func newConfig6(rec *cache.Interface, dns []netip.Addr, shared bool) (*Config6, error) {
	c := &Config6{Address: rec.IPv6, Gateway: rec.GatewayIPv6, Server: rec.ServerIPv6, Router: rec.RouterIPv6, OnLink: rec.OnLinkIPv6,
		DNS: dns, Shared: shared}
	if a := c.Address.Addr(); !a.Is6() || a.Is4In6() {
		return nil, &FieldError{Field: "IPv6", Value: rec.IPv6.String(), Reason: "not an IPv6 address with prefix"}
	}
	if c.Gateway.IsValid() && !c.Gateway.Is6() {
		return nil, &FieldError{Field: "GatewayIPv6", Value: rec.GatewayIPv6.String(), Reason: "not an IPv6 address"}
	}
	if c.Server.IsValid() && !c.Server.Is6() {
		return nil, &FieldError{Field: "ServerIPv6", Value: rec.ServerIPv6.String(), Reason: "not an IPv6 address"}
	}
	if c.Router.IsValid() && (!c.Router.IsLinkLocalUnicast() || c.Router.Zone() != "") {
		return nil, &FieldError{Field: "RouterIPv6", Value: rec.RouterIPv6.String(), Reason: "not an IPv6 link-local address (fe80::/10, no zone)"}
	}
	if c.OnLink.IsValid() && (!c.OnLink.Addr().Is6() || c.OnLink != c.OnLink.Masked()) {
		return nil, &FieldError{Field: "OnLinkIPv6", Value: rec.OnLinkIPv6.String(), Reason: "not an IPv6 prefix (address bits past the length zero)"}
	}
	return c, nil
}

// routes converts the record's routes into option 121 routes: every
// IPv4 route of the record (phase1 left out the connected one), so that
// the option is sent whenever the pod link had a route besides the
// connected one, as KubeVirt v0.53 does (it counts the connected route,
// then drops it). Default routes go last; RFC 3442 clients ignore option 3
// when 121 is present, so a default route the pod had is in 121, and a
// pod link without one gives none.
func (c *Config) routes(in []cache.Route) ([]Route, error) {
	var out []Route
	for i, r := range in {
		if !r.Dst.IsValid() {
			return nil, &FieldError{Field: fmt.Sprintf("Routes[%d].dst", i), Value: "", Reason: "not a CIDR"}
		}
		if !r.Dst.Addr().Is4() {
			c.Ignored = append(c.Ignored, fmt.Sprintf("route %s: option 121 carries IPv4 routes only", r.Dst))
			continue
		}
		gw := netip.IPv4Unspecified()
		if r.Gateway.IsValid() {
			if gw = r.Gateway; !gw.Is4() {
				return nil, &FieldError{Field: fmt.Sprintf("Routes[%d].gateway", i), Value: r.Gateway.String(), Reason: "not an IPv4 address"}
			}
		}
		out = append(out, Route{Dst: r.Dst.Masked(), Gateway: gw})
	}
	if len(out) == 0 {
		return nil, nil
	}
	// On-link routes first, so that a client installing the routes in
	// order (udhcpc's and dhclient's scripts do) can reach the gateways
	// of the next ones (ptp: "10.244.2.1/32 on-link" before
	// "10.244.2.0/24 via 10.244.2.1"); default routes last.
	rank := func(r Route) int {
		n := 0
		if r.Dst.Bits() == 0 {
			n += 2
		}
		if !r.Gateway.IsUnspecified() {
			n++
		}
		return n
	}
	slices.SortStableFunc(out, func(a, b Route) int { return cmp.Compare(rank(a), rank(b)) })
	return out, nil
}

func (c *Config) dhcpOptions(o *api.DHCPOptions) error {
	c.TFTPServerName = o.TFTPServerName
	c.BootFileName = o.BootFileName
	if len(o.NTPServers) > api.MaxNTPServers {
		return &FieldError{Field: "dhcpOptions.ntpServers", Value: fmt.Sprint(len(o.NTPServers)),
			Reason: fmt.Sprintf("more than %d addresses do not fit in one DHCP option", api.MaxNTPServers)}
	}
	for i, s := range o.NTPServers {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return &FieldError{Field: fmt.Sprintf("dhcpOptions.ntpServers[%d]", i), Value: s, Reason: "NTP servers must be IPv4 addresses"}
		}
		c.NTPServers = append(c.NTPServers, a)
	}
	seen := map[int]bool{}
	for i, p := range o.PrivateOptions {
		field := fmt.Sprintf("dhcpOptions.privateOptions[%d].option", i)
		if p.Option < 224 || p.Option > 254 {
			return &FieldError{Field: field, Value: fmt.Sprint(p.Option), Reason: "private options are 224–254"}
		}
		if seen[p.Option] {
			return &FieldError{Field: field, Value: fmt.Sprint(p.Option), Reason: "option given twice"}
		}
		seen[p.Option] = true
		c.Private = append(c.Private, PrivateOption{Code: uint8(p.Option), Value: p.Value})
	}
	return nil
}

// WithSubdomain prepends "<subdomain>.<the longest search domain holding
// .svc.>" to the search list, as KubeVirt does for a VMI with
// spec.subdomain, unless it is already there or there is no such domain.
func WithSubdomain(search []string, subdomain string) []string {
	if subdomain == "" {
		return search
	}
	var svc string
	for _, d := range search {
		if strings.Contains(d, ".svc.") && len(d) > len(svc) {
			svc = d
		}
	}
	if svc == "" {
		return search
	}
	sub := strings.ToLower(subdomain)
	if rest, ok := strings.CutPrefix(svc, sub+"."); ok && slices.Contains(search, rest) {
		return search // prepended before (the list came through here already)
	}
	full := sub + "." + svc
	return append([]string{full}, search...)
}

// checkDomain accepts a DNS name of letters, digits and hyphens, labels of
// 1–63 bytes not starting or ending with '-', at most 253 bytes.
func checkDomain(d string) error {
	if d == "" || len(d) > 253 {
		return fmt.Errorf("length %d not in 1–253", len(d))
	}
	for _, l := range strings.Split(d, ".") {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("label %q length not in 1–63", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			ch := l[i]
			if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-' || ch >= 'A' && ch <= 'Z') {
				return fmt.Errorf("label %q has character %q", l, ch)
			}
		}
	}
	return nil
}
