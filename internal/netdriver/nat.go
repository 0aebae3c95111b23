package netdriver

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// The chains of the NAT table. The base chains mirror the nat tables
// KubeVirt v0.53 ships in /etc/nftables (type nat; hooks prerouting -100,
// input 100, output -100, postrouting 100). The two regular chains keep
// KubeVirt's upper-case names on purpose, so that an operator who knows
// KubeVirt recognises them in `nft list table ip virtnet_nat`.
const (
	natChainPrerouting  = "prerouting"
	natChainInput       = "input"
	natChainOutput      = "output"
	natChainPostrouting = "postrouting"
	natChainPreInbound  = "KUBEVIRT_PREINBOUND"
	natChainPostInbound = "KUBEVIRT_POSTINBOUND"
)

// natChains returns the chains in the order they are created and listed.
func natChains() []string {
	return []string{
		natChainPrerouting, natChainInput, natChainOutput, natChainPostrouting,
		natChainPreInbound, natChainPostInbound,
	}
}

// ErrInvalidNAT is wrapped by every error about a malformed [NAT].
var ErrInvalidNAT = errors.New("invalid NAT spec")

// natAction is what a NAT rule does once it matches.
type natAction int

const (
	natMasquerade natAction = iota + 1
	natSNAT
	natDNAT
	natJump
	natReturn
)

// natRule is one rule of the masquerade rule set as plain data: the real
// driver compiles it to nftables expressions, the fake lists it as it is.
// Matches are applied (and printed) in field order: iifname, oifname,
// saddr, daddr, protocol + destination ports; every rule has a counter.
// An address or port list of one is a comparison, of more an anonymous
// set (ports: an interval set of the runs of consecutive ports); lists are
// sorted and free of duplicates (natRules makes them so), which is also
// the order the kernel lists a set's elements in.
type natRule struct {
	chain  string
	family Family
	iif    string
	oif    string
	saddr  []netip.Addr
	daddr  []netip.Addr
	proto  string   // "tcp", "udp" or "" (no port match)
	dports []uint16 // with proto
	action natAction
	to     netip.Addr // SNAT/DNAT target
	jump   string     // jump target chain
}

// String renders the rule as `nft list` would, minus the counter values,
// e.g. `ip saddr 127.0.0.1 tcp dport 8080 counter snat to 10.0.2.1`.
func (r natRule) String() string {
	l3 := "ip"
	if r.family == IPv6 {
		l3 = "ip6"
	}
	var b []string
	if r.iif != "" {
		b = append(b, "iifname "+strconv.Quote(r.iif))
	}
	if r.oif != "" {
		b = append(b, "oifname "+strconv.Quote(r.oif))
	}
	if len(r.saddr) > 0 {
		b = append(b, l3+" saddr "+addrsString(r.saddr))
	}
	if len(r.daddr) > 0 {
		b = append(b, l3+" daddr "+addrsString(r.daddr))
	}
	if r.proto != "" {
		b = append(b, r.proto+" dport "+portsString(r.dports))
	}
	b = append(b, "counter")
	switch r.action {
	case natMasquerade:
		b = append(b, "masquerade")
	case natSNAT:
		b = append(b, "snat to "+r.to.String())
	case natDNAT:
		b = append(b, "dnat to "+r.to.String())
	case natJump:
		b = append(b, "jump "+r.jump)
	case natReturn:
		b = append(b, "return")
	}
	return strings.Join(b, " ")
}

// short is String for messages: a rule with thousands of ports is cut.
func (r natRule) short() string {
	s := r.String()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// portRun is a run of consecutive ports, first to last.
type portRun struct{ first, last uint16 }

// portRuns splits sorted, unique ports into runs of consecutive ports.
func portRuns(ports []uint16) []portRun {
	var runs []portRun
	for _, p := range ports {
		if n := len(runs); n > 0 && runs[n-1].last+1 == p && runs[n-1].last != 65535 {
			runs[n-1].last = p
			continue
		}
		runs = append(runs, portRun{p, p})
	}
	return runs
}

// portsString prints one port bare and several as an nft set, runs of
// consecutive ports as ranges (`{ 22, 8000-8080 }`), as nft lists the
// interval sets they are compiled to.
func portsString(ports []uint16) string {
	if len(ports) == 1 {
		return strconv.Itoa(int(ports[0]))
	}
	var b strings.Builder
	b.WriteString("{ ")
	for i, r := range portRuns(ports) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(int(r.first)))
		if r.last != r.first {
			b.WriteString("-" + strconv.Itoa(int(r.last)))
		}
	}
	b.WriteString(" }")
	return b.String()
}

// addrsString prints one address bare and several as an nft set.
func addrsString(addrs []netip.Addr) string {
	if len(addrs) == 1 {
		return addrs[0].String()
	}
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return "{ " + strings.Join(s, ", ") + " }"
}

// IstioReservedPorts are the ports of Istio's Envoy sidecar (admin 15000,
// outbound 15001, inbound 15006, tunnel 15008, merged telemetry 15020,
// health 15021, telemetry 15090): with a proxy and no declared ports, a
// connection to them from the pod's loopback stays in the pod (KubeVirt
// v0.53's istio.ReservedPorts).
func IstioReservedPorts() []uint16 { return []uint16{15000, 15001, 15006, 15008, 15020, 15021, 15090} }

// IstioNonProxiedPorts are the ports Envoy does not take: with a proxy
// they are the only ones DNAT-ed to the VM from outside (KubeVirt v0.53's
// istio.NonProxiedPorts: ssh).
func IstioNonProxiedPorts() []uint16 { return []uint16{22} }

// IstioPassthroughSource is the source address Envoy uses when it passes an
// inbound connection on to the workload (127.0.0.6).
var IstioPassthroughSource = netip.AddrFrom4([4]byte{127, 0, 0, 6})

// natRules validates nat and returns its rule set in the order the rules
// are added, which is KubeVirt v0.53's order (KUBEVIRT_V053.md §3):
//
//  1. postrouting: ip saddr VM counter masquerade
//  2. prerouting: iifname POD counter jump KUBEVIRT_PREINBOUND
//  3. postrouting: oifname BRIDGE counter jump KUBEVIRT_POSTINBOUND
//  4. output and KUBEVIRT_POSTINBOUND: ip saddr LOOPBACK tcp dport
//     MIGRATION counter return (only when MigrationPorts is not empty)
//  5. without ports: KUBEVIRT_POSTINBOUND ip saddr LOOPBACK counter snat to
//     GW; KUBEVIRT_PREINBOUND counter dnat to VM; output ip daddr LOOPBACK
//     counter dnat to VM
//  6. with ports: the three rules of 5, each with `PROTO dport PORTS`, one
//     rule per protocol (tcp first when both are declared).
//
// LOOPBACK is 127.0.0.1 or ::1. With [NAT.Proxy] (Istio), as KubeVirt
// v0.53 does: LOOPBACK gains the proxy's passthrough source in the SNAT
// rule and the pod address in the output DNAT rule (IPv4 only); the
// catch-all or per-port DNAT of KUBEVIRT_PREINBOUND becomes `tcp dport 22
// counter dnat to VM` (the non-proxied ports; with declared ports, only
// those among them); without declared ports Envoy's own ports get the
// return rules of 4 before the rules of 5.
//
// Deliberate differences from KubeVirt's text, same packets matched:
// where KubeVirt writes a one-element set (`ip saddr { 127.0.0.1 }`) a
// plain comparison is used; where KubeVirt adds one rule per declared port
// (three per port: 39 ports overflowed the netlink socket, see
// nat_linux.go), the ports of a protocol share one rule per chain with an
// anonymous set (NAT rules end at their first match, so one rule with a
// set matches what the per-port rules matched). Port sets are interval
// sets of the runs of consecutive ports, listed as ranges (`{
// 49152-49153 }`): the kernel stores a plain set of 2-byte keys as a
// bitmap whose insert walks every element already added, so 65535 ports
// in three sets took 229 s of kernel time; as one interval each, 1 ms.
func natRules(nat NAT) ([]natRule, error) {
	if err := validateNAT(nat); err != nil {
		return nil, err
	}
	lo := netip.MustParseAddr("127.0.0.1")
	if nat.Family == IPv6 {
		lo = netip.IPv6Loopback()
	}
	f := nat.Family
	snatFrom, dnatTo := []netip.Addr{lo}, []netip.Addr{lo}
	if p := nat.Proxy; p != nil {
		if p.Source.IsValid() {
			snatFrom = sortedAddrs(append(snatFrom, p.Source))
		}
		if p.PodAddress.IsValid() {
			dnatTo = sortedAddrs(append(dnatTo, p.PodAddress))
		}
	}
	rules := []natRule{
		{chain: natChainPostrouting, family: f, saddr: []netip.Addr{nat.VM}, action: natMasquerade},
		{chain: natChainPrerouting, family: f, iif: nat.PodInterface, action: natJump, jump: natChainPreInbound},
		{chain: natChainPostrouting, family: f, oif: nat.Bridge, action: natJump, jump: natChainPostInbound},
	}
	returns := func(ports []uint16) {
		if len(ports) == 0 {
			return
		}
		for _, chain := range []string{natChainOutput, natChainPostInbound} {
			rules = append(rules, natRule{chain: chain, family: f, saddr: []netip.Addr{lo}, proto: "tcp",
				dports: sortedPorts(ports), action: natReturn})
		}
	}
	returns(nat.MigrationPorts)
	inbound := func(ports []uint16) {
		if len(ports) > 0 {
			rules = append(rules, natRule{chain: natChainPreInbound, family: f, proto: "tcp", dports: sortedPorts(ports), action: natDNAT, to: nat.VM})
		}
	}
	if len(nat.Ports) == 0 {
		if nat.Proxy != nil {
			returns(nat.Proxy.ReservedPorts)
			inbound(nat.Proxy.NonProxiedPorts)
		}
		rules = append(rules, natRule{chain: natChainPostInbound, family: f, saddr: snatFrom, action: natSNAT, to: nat.Gateway})
		if nat.Proxy == nil {
			rules = append(rules, natRule{chain: natChainPreInbound, family: f, action: natDNAT, to: nat.VM})
		}
		return append(rules, natRule{chain: natChainOutput, family: f, daddr: dnatTo, action: natDNAT, to: nat.VM}), nil
	}
	for _, proto := range []string{"tcp", "udp"} {
		var ports []uint16
		for _, p := range nat.Ports {
			if natProtocol(p.Protocol) == proto {
				ports = append(ports, p.Port)
			}
		}
		if len(ports) == 0 {
			continue
		}
		ports = sortedPorts(ports)
		rules = append(rules, natRule{chain: natChainPostInbound, family: f, saddr: snatFrom, proto: proto, dports: ports, action: natSNAT, to: nat.Gateway})
		if nat.Proxy == nil {
			rules = append(rules, natRule{chain: natChainPreInbound, family: f, proto: proto, dports: ports, action: natDNAT, to: nat.VM})
		}
		rules = append(rules, natRule{chain: natChainOutput, family: f, daddr: dnatTo, proto: proto, dports: ports, action: natDNAT, to: nat.VM})
	}
	if nat.Proxy != nil {
		// KubeVirt forwards a declared port that Envoy leaves alone as
		// TCP, whatever the port's protocol.
		var direct []uint16
		for _, p := range nat.Ports {
			if slices.Contains(nat.Proxy.NonProxiedPorts, p.Port) {
				direct = append(direct, p.Port)
			}
		}
		inbound(direct)
	}
	return rules, nil
}

// sortedPorts returns ports sorted, without duplicates, in a new slice.
func sortedPorts(ports []uint16) []uint16 {
	out := slices.Clone(ports)
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedAddrs sorts and deduplicates addrs in place (they are of one
// family: byte order, as the kernel lists set elements).
func sortedAddrs(addrs []netip.Addr) []netip.Addr {
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(addrs)
}

// natProtocol lower-cases a port's protocol; empty means tcp, as in
// KubeVirt.
func natProtocol(p string) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(p)
}

// natListing is the listing [Driver.NATRules] returns for a table holding
// exactly nat's rules: one "CHAIN: RULE" line per rule, chains in
// natChains order, rules of a chain in the order they were added. The real
// driver decodes the same lines from the kernel, the fake uses this.
func natListing(nat NAT) ([]string, error) {
	rules, err := natRules(nat)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, chain := range natChains() {
		for _, r := range rules {
			if r.chain == chain {
				lines = append(lines, chain+": "+r.String())
			}
		}
	}
	return lines, nil
}

// validateNAT checks every field of nat; errors wrap [ErrInvalidNAT] and
// name the field and its value.
func validateNAT(nat NAT) error {
	bad := func(field string, value any) error {
		return fmt.Errorf("netdriver: NAT field %s: bad value %q: %w", field, fmt.Sprint(value), ErrInvalidNAT)
	}
	if nat.Family != IPv4 && nat.Family != IPv6 {
		return bad("Family", int(nat.Family))
	}
	for _, f := range []struct{ name, value string }{{"PodInterface", nat.PodInterface}, {"Bridge", nat.Bridge}} {
		// IFNAMSIZ is 16 with the terminating NUL.
		if f.value == "" || len(f.value) > 15 || strings.ContainsAny(f.value, "/ \x00") {
			return bad(f.name, f.value)
		}
	}
	for _, f := range []struct {
		name string
		addr netip.Addr
	}{{"VM", nat.VM}, {"Gateway", nat.Gateway}} {
		if !f.addr.IsValid() || f.addr.Zone() != "" || f.addr.Is4In6() ||
			f.addr.Is4() != (nat.Family == IPv4) {
			return bad(f.name, f.addr)
		}
	}
	for i, p := range nat.Ports {
		if proto := natProtocol(p.Protocol); proto != "tcp" && proto != "udp" {
			return bad(fmt.Sprintf("Ports[%d].Protocol", i), p.Protocol)
		}
		if p.Port == 0 {
			return bad(fmt.Sprintf("Ports[%d].Port", i), p.Port)
		}
	}
	for i, p := range nat.MigrationPorts {
		if p == 0 {
			return bad(fmt.Sprintf("MigrationPorts[%d]", i), p)
		}
	}
	if p := nat.Proxy; p != nil {
		for _, f := range []struct {
			name string
			addr netip.Addr
		}{{"Proxy.Source", p.Source}, {"Proxy.PodAddress", p.PodAddress}} {
			if f.addr.IsValid() && (f.addr.Zone() != "" || f.addr.Is4In6() || f.addr.Is4() != (nat.Family == IPv4)) {
				return bad(f.name, f.addr)
			}
		}
		for _, l := range []struct {
			name  string
			ports []uint16
		}{{"Proxy.ReservedPorts", p.ReservedPorts}, {"Proxy.NonProxiedPorts", p.NonProxiedPorts}} {
			for i, port := range l.ports {
				if port == 0 {
					return bad(fmt.Sprintf("%s[%d]", l.name, i), port)
				}
			}
		}
	}
	return nil
}

// SysctlSetting is one sysctl, keyed as [Driver.SetSysctl] takes it
// (relative to /proc/sys/net).
type SysctlSetting struct{ Key, Value string }

// NATSysctls returns the sysctls the masquerade binding must set in the pod
// namespace, in this order, for the NAT rules of a family to work
// (measured in nat_linux_test.go):
//
//   - ipv4/ip_forward=1 or ipv6/conf/all/forwarding=1: the pod routes
//     between its interface and the bridge (KubeVirt sets these too).
//   - ipv4/conf/BRIDGE/route_localnet=1: see ROUTE_LOCALNET below.
//
// ROUTE_LOCALNET: KUBEVIRT_V053.md's rule set forwards the pod's own
// 127.0.0.1:P to the VM (output-chain DNAT, then SNAT to the gateway in
// postrouting). After the output DNAT the kernel re-routes the packet while
// its source is still 127.0.0.1 and refuses a loopback source on a
// non-loopback device unless route_localnet is set on that device: the
// output DNAT counter counts every SYN, the postrouting SNAT counter none,
// and the connection times out. The reply, de-SNAT-ed to 127.0.0.1 as it
// enters the bridge, needs the same switch. Setting it on the bridge alone
// is enough and keeps martian 127/8 traffic from leaving by eth0. KubeVirt
// v0.53 does not set it (its loopback rules forward nothing, so neither
// `virtctl port-forward` nor a sidecar reaches the VM); KubeVirt added the
// same bridge-only setting in v0.57.
//
// IPv6 has no such switch: a ::1 source never leaves the loopback device,
// so the ::1 output rule is installed, as KubeVirt does, but forwards
// nothing.
func NATSysctls(family Family, bridge string) []SysctlSetting {
	if family == IPv6 {
		return []SysctlSetting{{"ipv6/conf/all/forwarding", "1"}}
	}
	return []SysctlSetting{
		{"ipv4/ip_forward", "1"},
		{"ipv4/conf/" + bridge + "/route_localnet", "1"},
	}
}

// NATListing is what [Driver.NATRules] returns once [Driver.ApplyNAT] has
// applied nat: callers compare the two to skip a rewrite that would change
// nothing.
func NATListing(nat NAT) ([]string, error) { return natListing(nat) }
