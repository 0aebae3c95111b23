package netdriver

import (
	"errors"
	"fmt"
	"net/netip"
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
type natRule struct {
	chain  string
	family Family
	iif    string
	oif    string
	saddr  netip.Addr
	daddr  netip.Addr
	proto  string   // "tcp", "udp" or "" (no port match)
	dports []uint16 // one: a comparison; more: an anonymous set
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
	if r.saddr.IsValid() {
		b = append(b, l3+" saddr "+r.saddr.String())
	}
	if r.daddr.IsValid() {
		b = append(b, l3+" daddr "+r.daddr.String())
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

// portsString prints one port bare and several as an nft set.
func portsString(ports []uint16) string {
	if len(ports) == 1 {
		return strconv.Itoa(int(ports[0]))
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return "{ " + strings.Join(s, ", ") + " }"
}

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
//  6. with ports: the three rules of 5, each with `PROTO dport N`, per port.
//
// LOOPBACK is 127.0.0.1 or ::1. Not done: KubeVirt's Istio variant (Envoy
// port returns, 127.0.0.6 as an extra SNAT source, the pod IP as an extra
// output DNAT destination, only port 22 DNAT-ed inbound); virtnet has no
// Istio support. Where KubeVirt writes a one-element set (`ip saddr {
// 127.0.0.1 }`) a plain comparison is used: same match, simpler rule.
func natRules(nat NAT) ([]natRule, error) {
	if err := validateNAT(nat); err != nil {
		return nil, err
	}
	lo := netip.MustParseAddr("127.0.0.1")
	if nat.Family == IPv6 {
		lo = netip.IPv6Loopback()
	}
	f := nat.Family
	rules := []natRule{
		{chain: natChainPostrouting, family: f, saddr: nat.VM, action: natMasquerade},
		{chain: natChainPrerouting, family: f, iif: nat.PodInterface, action: natJump, jump: natChainPreInbound},
		{chain: natChainPostrouting, family: f, oif: nat.Bridge, action: natJump, jump: natChainPostInbound},
	}
	if len(nat.MigrationPorts) > 0 {
		for _, chain := range []string{natChainOutput, natChainPostInbound} {
			rules = append(rules, natRule{chain: chain, family: f, saddr: lo, proto: "tcp",
				dports: append([]uint16(nil), nat.MigrationPorts...), action: natReturn})
		}
	}
	if len(nat.Ports) == 0 {
		return append(rules,
			natRule{chain: natChainPostInbound, family: f, saddr: lo, action: natSNAT, to: nat.Gateway},
			natRule{chain: natChainPreInbound, family: f, action: natDNAT, to: nat.VM},
			natRule{chain: natChainOutput, family: f, daddr: lo, action: natDNAT, to: nat.VM},
		), nil
	}
	for _, p := range nat.Ports {
		proto, dport := natProtocol(p.Protocol), []uint16{p.Port}
		rules = append(rules,
			natRule{chain: natChainPostInbound, family: f, saddr: lo, proto: proto, dports: dport, action: natSNAT, to: nat.Gateway},
			natRule{chain: natChainPreInbound, family: f, proto: proto, dports: dport, action: natDNAT, to: nat.VM},
			natRule{chain: natChainOutput, family: f, daddr: lo, proto: proto, dports: dport, action: natDNAT, to: nat.VM},
		)
	}
	return rules, nil
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
