package netdriver

import (
	"cmp"
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
	NATChainPrerouting  = "prerouting"
	NATChainInput       = "input"
	NATChainOutput      = "output"
	NATChainPostrouting = "postrouting"
	NATChainPreInbound  = "KUBEVIRT_PREINBOUND"
	NATChainPostInbound = "KUBEVIRT_POSTINBOUND"
)

// NATChains returns the chains in the order they are created and listed.
func NATChains() []string {
	return []string{
		NATChainPrerouting, NATChainInput, NATChainOutput, NATChainPostrouting,
		NATChainPreInbound, NATChainPostInbound,
	}
}

// ErrInvalidNAT is wrapped by every error about a malformed [NAT].
var ErrInvalidNAT = errors.New("invalid NAT spec")

// NATAction is what a NAT rule does once it matches.
type NATAction int

const (
	NATMasquerade NATAction = iota + 1
	NATSNAT
	NATDNAT
	NATJump
	NATReturn
)

// NATRule is one rule of the masquerade rule set as plain data: the real
// driver compiles it to nftables expressions, the fake lists it as it is.
// Matches are applied (and printed) in field order: iifname, oifname,
// saddr, daddr, protocol + destination ports; every rule has a counter.
// An address or port list of one is a comparison, of more an anonymous
// set (ports: an interval set of the runs of consecutive ports); lists are
// sorted and free of duplicates ([NAT.Rules] makes them so), which is also
// the order the kernel lists a set's elements in.
type NATRule struct {
	Chain  string
	Family Family
	// IIF and OIF match the input and output interface names ("" for
	// any).
	IIF string
	OIF string
	// SAddr and DAddr match source and destination addresses (none for
	// any).
	SAddr []netip.Addr
	DAddr []netip.Addr
	// Proto is "tcp", "udp" or "" (no port match); DPorts go with it.
	Proto  string
	DPorts []uint16
	Action NATAction
	// To is the SNAT or DNAT target.
	To netip.Addr
	// Jump is the target chain of [NATJump].
	Jump string
}

// String renders the rule as `nft list` would, minus the counter values,
// e.g. `ip saddr 127.0.0.1 tcp dport 8080 counter snat to 10.0.2.1`.
func (r NATRule) String() string {
	l3 := "ip"
	if r.Family == IPv6 {
		l3 = "ip6"
	}
	var b []string
	if r.IIF != "" {
		b = append(b, "iifname "+strconv.Quote(r.IIF))
	}
	if r.OIF != "" {
		b = append(b, "oifname "+strconv.Quote(r.OIF))
	}
	if len(r.SAddr) > 0 {
		b = append(b, l3+" saddr "+addrsString(r.SAddr))
	}
	if len(r.DAddr) > 0 {
		b = append(b, l3+" daddr "+addrsString(r.DAddr))
	}
	if r.Proto != "" {
		b = append(b, r.Proto+" dport "+portsString(r.DPorts))
	}
	b = append(b, "counter")
	switch r.Action {
	case NATMasquerade:
		b = append(b, "masquerade")
	case NATSNAT:
		b = append(b, "snat to "+r.To.String())
	case NATDNAT:
		b = append(b, "dnat to "+r.To.String())
	case NATJump:
		b = append(b, "jump "+r.Jump)
	case NATReturn:
		b = append(b, "return")
	}
	return strings.Join(b, " ")
}

// Short is String for messages: a rule with thousands of ports is cut.
func (r NATRule) Short() string {
	s := r.String()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// PortRun is a run of consecutive ports, first to last.
type PortRun struct{ First, Last uint16 }

// PortRuns splits sorted, unique ports into runs of consecutive ports.
func PortRuns(ports []uint16) []PortRun {
	var runs []PortRun
	for _, p := range ports {
		if n := len(runs); n > 0 && runs[n-1].Last+1 == p && runs[n-1].Last != 65535 {
			runs[n-1].Last = p
			continue
		}
		runs = append(runs, PortRun{p, p})
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
	for i, r := range PortRuns(ports) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(int(r.First)))
		if r.Last != r.First {
			b.WriteString("-" + strconv.Itoa(int(r.Last)))
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
// outbound 15001, debug 15004, inbound 15006, tunnel 15008, secure
// network 15009, merged telemetry 15020, health 15021, DNS 15053,
// telemetry 15090): with a proxy and no declared ports, a connection to
// them from the pod's loopback stays in the pod. This is KubeVirt v1.9's
// set (pkg/network/istio); v0.53's lacked 15004, 15009 and 15053, which
// newer Envoys listen on too, so they are reserved whatever the VMI's
// KubeVirt version.
func IstioReservedPorts() []uint16 {
	return []uint16{15000, 15001, 15004, 15006, 15008, 15009, 15020, 15021, 15053, 15090}
}

// IstioNonProxiedPorts are the ports Envoy does not take: with a proxy
// they are the only ones DNAT-ed to the VM from outside (KubeVirt v0.53's
// istio.NonProxiedPorts: ssh).
func IstioNonProxiedPorts() []uint16 { return []uint16{22} }

// IstioPassthroughSource is the source address Envoy uses when it passes an
// inbound connection on to the workload (127.0.0.6).
func IstioPassthroughSource() netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, 6}) }

// Rules validates nat and returns its rule set in the order the rules
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
func (nat NAT) Rules() ([]NATRule, error) {
	if err := nat.Validate(); err != nil {
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
	rules := []NATRule{
		{Chain: NATChainPostrouting, Family: f, SAddr: []netip.Addr{nat.VM}, Action: NATMasquerade},
		{Chain: NATChainPrerouting, Family: f, IIF: nat.PodInterface, Action: NATJump, Jump: NATChainPreInbound},
		{Chain: NATChainPostrouting, Family: f, OIF: nat.Bridge, Action: NATJump, Jump: NATChainPostInbound},
	}
	returns := func(ports []uint16) {
		if len(ports) == 0 {
			return
		}
		for _, chain := range []string{NATChainOutput, NATChainPostInbound} {
			rules = append(rules, NATRule{Chain: chain, Family: f, SAddr: []netip.Addr{lo}, Proto: "tcp",
				DPorts: sortedPorts(ports), Action: NATReturn})
		}
	}
	returns(nat.MigrationPorts)
	inbound := func(ports []uint16) {
		if len(ports) > 0 {
			rules = append(rules, NATRule{Chain: NATChainPreInbound, Family: f, Proto: "tcp", DPorts: sortedPorts(ports), Action: NATDNAT, To: nat.VM})
		}
	}
	if len(nat.Ports) == 0 {
		if nat.Proxy != nil {
			returns(nat.Proxy.ReservedPorts)
			inbound(nat.Proxy.NonProxiedPorts)
		}
		rules = append(rules, NATRule{Chain: NATChainPostInbound, Family: f, SAddr: snatFrom, Action: NATSNAT, To: nat.Gateway})
		if nat.Proxy == nil {
			rules = append(rules, NATRule{Chain: NATChainPreInbound, Family: f, Action: NATDNAT, To: nat.VM})
		}
		return append(rules, NATRule{Chain: NATChainOutput, Family: f, DAddr: dnatTo, Action: NATDNAT, To: nat.VM}), nil
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
		rules = append(rules, NATRule{Chain: NATChainPostInbound, Family: f, SAddr: snatFrom, Proto: proto, DPorts: ports, Action: NATSNAT, To: nat.Gateway})
		if nat.Proxy == nil {
			rules = append(rules, NATRule{Chain: NATChainPreInbound, Family: f, Proto: proto, DPorts: ports, Action: NATDNAT, To: nat.VM})
		}
		rules = append(rules, NATRule{Chain: NATChainOutput, Family: f, DAddr: dnatTo, Proto: proto, DPorts: ports, Action: NATDNAT, To: nat.VM})
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
// Family: byte order, as the kernel lists set elements).
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

// NATListing is what [Driver.NATRules] returns once [Driver.ApplyNAT] has
// applied nat: callers compare the two to skip a rewrite that would change
// nothing. It is one "CHAIN: RULE" line per rule, chains in NATChains
// order, rules of a chain in the order they were added. The real driver
// decodes the same lines from the kernel, the fake uses this.
func NATListing(nat NAT) ([]string, error) {
	rules, err := nat.Rules()
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, chain := range NATChains() {
		for _, r := range rules {
			if r.Chain == chain {
				lines = append(lines, chain+": "+r.String())
			}
		}
	}
	return lines, nil
}

// Validate checks every field of nat; errors wrap [ErrInvalidNAT] and
// name the field and its value.
func (nat NAT) Validate() error {
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
	// wrongAddr refuses an address of the other family, with a zone or
	// IPv4-mapped.
	wrongAddr := func(a netip.Addr) bool {
		return a.Zone() != "" || a.Is4In6() || a.Is4() != (nat.Family == IPv4)
	}
	zeroPort := func(field string, ports []uint16) error {
		if i := slices.Index(ports, 0); i >= 0 {
			return bad(fmt.Sprintf("%s[%d]", field, i), 0)
		}
		return nil
	}
	if !nat.VM.IsValid() || wrongAddr(nat.VM) {
		return bad("VM", nat.VM)
	}
	if !nat.Gateway.IsValid() || wrongAddr(nat.Gateway) {
		return bad("Gateway", nat.Gateway)
	}
	for i, p := range nat.Ports {
		if proto := natProtocol(p.Protocol); proto != "tcp" && proto != "udp" {
			return bad(fmt.Sprintf("Ports[%d].Protocol", i), p.Protocol)
		}
		if p.Port == 0 {
			return bad(fmt.Sprintf("Ports[%d].Port", i), p.Port)
		}
	}
	if err := zeroPort("MigrationPorts", nat.MigrationPorts); err != nil {
		return err
	}
	if p := nat.Proxy; p != nil {
		if p.Source.IsValid() && wrongAddr(p.Source) {
			return bad("Proxy.Source", p.Source)
		}
		if p.PodAddress.IsValid() && wrongAddr(p.PodAddress) {
			return bad("Proxy.PodAddress", p.PodAddress)
		}
		return cmp.Or(zeroPort("Proxy.ReservedPorts", p.ReservedPorts), zeroPort("Proxy.NonProxiedPorts", p.NonProxiedPorts))
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
