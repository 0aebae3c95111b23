package kernel

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtnet/virtnet/netdriver"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	mdnetlink "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The masquerade binding's NAT rules, through nftables netlink messages
// (github.com/google/nftables): no nft or iptables binary is run.
//
// Kernel needs: nf_tables with the nat, masq and counter expressions,
// nf_conntrack and nf_nat (CONFIG_NF_TABLES, CONFIG_NFT_NAT,
// CONFIG_NFT_MASQ, CONFIG_NF_CONNTRACK; built in or auto-loaded on first
// use). For the output-chain DNAT of 127.0.0.1 to reach the VM,
// net.ipv4.conf.<bridge>.route_localnet must be 1: see [netdriver.NATSysctls].

// natTable returns virtnet's table of a family.
func natTable(family netdriver.Family) *nftables.Table {
	t := &nftables.Table{Name: netdriver.NATTable, Family: nftables.TableFamilyIPv4}
	if family == netdriver.IPv6 {
		t.Family = nftables.TableFamilyIPv6
	}
	return t
}

// familyName is the nft name of a table family, for messages.
func familyName(family netdriver.Family) string {
	if family == netdriver.IPv6 {
		return "ip6"
	}
	return "ip"
}

// queueNAT queues on conn the one netlink batch (one nftables
// transaction) that makes the table with its chains, sets and rules. With
// replace, the batch first adds the table (a no-op if it exists) and
// deletes it with whatever it held. The kernel applies the batch
// atomically: a packet sees either the old rule set or the new one, never
// an empty table, and a failed batch leaves the old rules in place.
// Re-running converges.
//
// Without replace the batch only adds, which matters for a process that
// exits soon after (a CNI plugin, phase1 run by a launcher): the release
// of the netfilter socket waits for the destruction of what a committed
// batch deleted, an RCU grace period (5–11 ms here; see nftConn), and a
// batch that deletes nothing leaves none to wait for.
func queueNAT(conn *nftables.Conn, nat netdriver.NAT, replace bool) error {
	rules, err := nat.Rules()
	if err != nil {
		return err
	}
	table := natTable(nat.Family)
	if replace {
		conn.AddTable(table)
		conn.DelTable(table)
	}
	conn.AddTable(table)
	chains := addNATChains(conn, table)
	var sets uint32
	for _, r := range rules {
		exprs, err := natExprs(conn, table, r, &sets)
		if err != nil {
			return fmt.Errorf("netdriver: NAT table %s %s: rule %q: %w", familyName(nat.Family), netdriver.NATTable, r.Short(), err)
		}
		conn.AddRule(&nftables.Rule{Table: table, Chain: chains[r.Chain], Exprs: exprs})
	}
	return nil
}

// errCaptured refuses a second batch on a capture connection.
var errCaptured = errors.New("netdriver: batch already captured")

// batchCaptured is what a capture connection's reads return: it ends
// google/nftables' Flush once the batch has been captured, without the
// read of one made-up ACK per message (a third of the cost of building a
// batch). Flush stops at the first ENOBUFS (the kernel sends nothing more
// after one), so batchCaptured is ENOBUFS to errors.Is; [batchBuilder]
// expects it and nothing else.
type batchCaptured struct{}

func (batchCaptured) Error() string        { return "netdriver: batch captured" }
func (batchCaptured) Is(target error) bool { return target == syscall.ENOBUFS }

// batchBuilder turns rule sets into batches: the messages of nat's batch
// (see queueNAT), from NFNL_MSG_BATCH_BEGIN to NFNL_MSG_BATCH_END, as
// google/nftables builds them, on a connection that sends nothing. The
// connection is made once (its dial seeds a random generator); a builder
// serves one batch at a time, and after an error it is dropped (the
// connection may keep queued messages or a serialization error).
type batchBuilder struct {
	c     *nftables.Conn
	batch []mdnetlink.Message
}

func newBatchBuilder() (*batchBuilder, error) {
	b := &batchBuilder{}
	c, err := nftables.New(nftables.AsLasting(), nftables.WithTestDial(func(req []mdnetlink.Message) ([]mdnetlink.Message, error) {
		if req == nil {
			return nil, batchCaptured{}
		}
		if b.batch != nil {
			return nil, errCaptured
		}
		b.batch = slices.Clone(req)
		return nil, nil
	}))
	if err != nil {
		return nil, err
	}
	b.c = c
	return b, nil
}

// build returns nat's batch (see queueNAT). Without replace, the table's
// creation carries NLM_F_EXCL: if the table exists the kernel refuses the
// whole batch with EEXIST, and the caller sends the replacing one.
func (b *batchBuilder) build(nat netdriver.NAT, replace bool) ([]mdnetlink.Message, error) {
	b.batch = nil
	if err := queueNAT(b.c, nat, replace); err != nil {
		return nil, err
	}
	if err := b.c.Flush(); err != nil && !errors.Is(err, batchCaptured{}) {
		return nil, fmt.Errorf("netdriver: NAT table %s %s: %w", familyName(nat.Family), netdriver.NATTable, err)
	}
	batch := b.batch
	b.batch = nil
	if len(batch) < 2 {
		return nil, fmt.Errorf("netdriver: NAT table %s %s: no batch was built", familyName(nat.Family), netdriver.NATTable)
	}
	if !replace {
		for i := range batch {
			if batch[i].Header.Type == newTableType {
				batch[i].Header.Flags |= mdnetlink.Excl
				break
			}
		}
	}
	return batch, nil
}

// newTableType is the netlink message type of an nftables NEWTABLE.
const newTableType = mdnetlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWTABLE)

// sendBatch sends batch on nl as nft does: without an ACK per message.
// The kernel processes a netfilter batch within the sendmsg call (the
// socket's netlink_rcv runs in the sender's context), reports every message
// that fails whether or not it asked for an ACK, and a success only if
// asked. So once sendmsg has returned, the batch succeeded exactly when
// nothing is queued on the socket: one non-blocking peek tells, where
// google/nftables' Flush asks for and reads an ACK per message (20–200 of
// them, two recvmsg each) and an echo of each rule. The socket holds nothing else: every other
// request on it was answered in full before, and after an error the driver
// drops it.
//
// It returns how long the sendmsg of the batch took: the kernel's own time
// for the transaction, commit included.
func sendBatch(nl *mdnetlink.Conn, batch []mdnetlink.Message) (time.Duration, error) {
	msgs := make([]mdnetlink.Message, len(batch))
	for i, m := range batch {
		m.Header.Length, m.Header.Sequence, m.Header.PID = 0, 0, 0
		// No ACKs, and no echo of each rule (google/nftables asks for
		// one to learn the rule's handle, which nothing here needs).
		m.Header.Flags &^= mdnetlink.Acknowledge | mdnetlink.Echo
		msgs[i] = m
	}
	start := time.Now()
	_, err := nl.SendMessages(msgs)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	raw, err := nl.SyscallConn()
	if err != nil {
		return took, err
	}
	var peekErr error
	if err := raw.Control(func(fd uintptr) {
		var b [16]byte
		_, _, peekErr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	}); err != nil {
		return took, err
	}
	if errors.Is(peekErr, unix.EAGAIN) {
		return took, nil
	}
	if peekErr != nil {
		return took, fmt.Errorf("check for errors of the batch: %w", peekErr)
	}
	// Something is queued: an error of the batch (Receive returns it).
	if err := nl.SetReadDeadline(time.Now().Add(batchReplyTimeout)); err != nil {
		return took, err
	}
	defer func() { _ = nl.SetReadDeadline(time.Time{}) }()
	replies, err := nl.Receive()
	if err != nil {
		return took, err
	}
	return took, fmt.Errorf("unexpected reply to a batch without ACKs: %d messages, the first of type %d", len(replies), replies[0].Header.Type)
}

// batchReplyTimeout bounds the read of a batch's error, which is queued
// by the time the batch's sendmsg returns.
const batchReplyTimeout = 10 * time.Second

// addNATChains queues the four base chains and the two regular ones.
func addNATChains(conn *nftables.Conn, table *nftables.Table) map[string]*nftables.Chain {
	base := func(name string, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: table, Type: nftables.ChainTypeNAT, Hooknum: hook, Priority: prio}
	}
	chains := map[string]*nftables.Chain{
		netdriver.NATChainPrerouting:  base(netdriver.NATChainPrerouting, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest),
		netdriver.NATChainInput:       base(netdriver.NATChainInput, nftables.ChainHookInput, nftables.ChainPriorityNATSource),
		netdriver.NATChainOutput:      base(netdriver.NATChainOutput, nftables.ChainHookOutput, nftables.ChainPriorityNATDest),
		netdriver.NATChainPostrouting: base(netdriver.NATChainPostrouting, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource),
		netdriver.NATChainPreInbound:  {Name: netdriver.NATChainPreInbound, Table: table},
		netdriver.NATChainPostInbound: {Name: netdriver.NATChainPostInbound, Table: table},
	}
	for _, name := range netdriver.NATChains() {
		conn.AddChain(chains[name])
	}
	return chains
}

// deleteNAT removes the family's virtnet_nat table. The batch adds the
// table before deleting it, so a missing table is not an error and there
// is no check-then-act race.
func deleteNAT(conn *nftables.Conn, family netdriver.Family) error {
	if family != netdriver.IPv4 && family != netdriver.IPv6 {
		return fmt.Errorf("netdriver: NAT field Family: bad value %q: %w", strconv.Itoa(int(family)), netdriver.ErrInvalidNAT)
	}
	table := natTable(family)
	conn.AddTable(table)
	conn.DelTable(table)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("netdriver: delete NAT table %s %s: %w", familyName(family), netdriver.NATTable, err)
	}
	return nil
}

// natSetChunk is the number of set elements per NEWSETELEM message: 2048
// IPv6 addresses (28 bytes each) stay under a netlink attribute's 64 KiB.
const natSetChunk = 2048

// Register 1 is the only register the rules use.
const natReg = 1

// Payload offsets of the matched header fields.
const (
	ip4SaddrOffset = 12
	ip4DaddrOffset = 16
	ip6SaddrOffset = 8
	ip6DaddrOffset = 24
	dportOffset    = 2 // in the TCP and UDP header
)

// natExprs compiles a rule; a match on several addresses or ports queues
// an anonymous set. The set's ID and name come from sets, counted per
// batch: google/nftables v0.3.0 numbers sets from an unsynchronised
// package-level counter when the ID is 0, a data race when two namespaces
// are set up at once.
func natExprs(conn *nftables.Conn, table *nftables.Table, r netdriver.NATRule, sets *uint32) ([]expr.Any, error) {
	var e []expr.Any
	ifname := func(key expr.MetaKey, name string) {
		data := make([]byte, unix.IFNAMSIZ) // NUL-padded, as nft does
		copy(data, name)
		e = append(e, &expr.Meta{Key: key, Register: natReg}, &expr.Cmp{Op: expr.CmpOpEq, Register: natReg, Data: data})
	}
	// addSet queues an anonymous set of elems and a lookup of register 1
	// in it.
	addSet := func(keyType nftables.SetDatatype, interval bool, elems []nftables.SetElement) error {
		*sets++
		// Size: google/nftables sizes a constant set to the elements
		// given to AddSet, the first chunk only; a later description
		// with the whole size overrides that one (the kernel keeps the
		// last attribute of a type) so that the kernel takes the rest.
		set := &nftables.Set{Table: table, Anonymous: true, Constant: true, Interval: interval, KeyType: keyType,
			ID: *sets, Name: "__set%d", Size: uint32(len(elems))}
		// A netlink attribute holds at most 64 KiB, so the elements go in
		// chunks, one NEWSETELEM message each, as nft does. The kernel
		// takes elements for an anonymous set until a rule binds it,
		// which happens after this; google/nftables only refuses it
		// client-side, hence the copy that is not marked anonymous.
		first := min(len(elems), natSetChunk)
		if err := conn.AddSet(set, elems[:first]); err != nil {
			return fmt.Errorf("set of %d elements: %w", len(elems), err)
		}
		more := *set
		more.Anonymous = false
		for rest := elems[first:]; len(rest) > 0; {
			n := min(len(rest), natSetChunk)
			if err := conn.SetAddElements(&more, rest[:n]); err != nil {
				return fmt.Errorf("set of %d elements: %w", len(elems), err)
			}
			rest = rest[n:]
		}
		e = append(e, &expr.Lookup{SourceRegister: natReg, SetName: set.Name, SetID: set.ID})
		return nil
	}
	// match compares register 1 with one value, or looks it up in a new
	// anonymous set of the values.
	match := func(keyType nftables.SetDatatype, values [][]byte) error {
		if len(values) == 1 {
			e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: natReg, Data: values[0]})
			return nil
		}
		elems := make([]nftables.SetElement, len(values))
		for i, v := range values {
			elems[i] = nftables.SetElement{Key: v}
		}
		return addSet(keyType, false, elems)
	}
	addrs := func(offset4, offset6 uint32, list []netip.Addr) error {
		offset, keyType, n := offset4, nftables.TypeIPAddr, uint32(4)
		if r.Family == netdriver.IPv6 {
			offset, keyType, n = offset6, nftables.TypeIP6Addr, 16
		}
		values := make([][]byte, len(list))
		for i, a := range list {
			values[i] = a.AsSlice()
		}
		e = append(e, &expr.Payload{DestRegister: natReg, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: n})
		return match(keyType, values)
	}
	if r.IIF != "" {
		ifname(expr.MetaKeyIIFNAME, r.IIF)
	}
	if r.OIF != "" {
		ifname(expr.MetaKeyOIFNAME, r.OIF)
	}
	if len(r.SAddr) > 0 {
		if err := addrs(ip4SaddrOffset, ip6SaddrOffset, r.SAddr); err != nil {
			return nil, err
		}
	}
	if len(r.DAddr) > 0 {
		if err := addrs(ip4DaddrOffset, ip6DaddrOffset, r.DAddr); err != nil {
			return nil, err
		}
	}
	if r.Proto != "" {
		l4 := byte(unix.IPPROTO_TCP)
		if r.Proto == "udp" {
			l4 = unix.IPPROTO_UDP
		}
		e = append(e,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: natReg},
			&expr.Cmp{Op: expr.CmpOpEq, Register: natReg, Data: []byte{l4}},
			&expr.Payload{DestRegister: natReg, Base: expr.PayloadBaseTransportHeader, Offset: dportOffset, Len: 2})
		if len(r.DPorts) == 1 {
			e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: natReg, Data: binary.BigEndian.AppendUint16(nil, r.DPorts[0])})
		} else {
			// An interval set: each run of ports is a start element and,
			// unless it ends at 65535, an end element one past its last
			// port (the kernel's interval sets are half-open).
			var elems []nftables.SetElement
			for _, run := range netdriver.PortRuns(r.DPorts) {
				elems = append(elems, nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, run.First)})
				if run.Last != 65535 {
					elems = append(elems, nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, run.Last+1), IntervalEnd: true})
				}
			}
			if err := addSet(nftables.TypeInetService, true, elems); err != nil {
				return nil, err
			}
		}
	}
	e = append(e, &expr.Counter{})
	natFamily := uint32(unix.NFPROTO_IPV4)
	if r.Family == netdriver.IPv6 {
		natFamily = unix.NFPROTO_IPV6
	}
	switch r.Action {
	case netdriver.NATMasquerade:
		e = append(e, &expr.Masq{})
	case netdriver.NATSNAT, netdriver.NATDNAT:
		typ := expr.NATTypeSourceNAT
		if r.Action == netdriver.NATDNAT {
			typ = expr.NATTypeDestNAT
		}
		e = append(e,
			&expr.Immediate{Register: natReg, Data: r.To.AsSlice()},
			&expr.NAT{Type: typ, Family: natFamily, RegAddrMin: natReg})
	case netdriver.NATJump:
		e = append(e, &expr.Verdict{Kind: expr.VerdictJump, Chain: r.Jump})
	case netdriver.NATReturn:
		e = append(e, &expr.Verdict{Kind: expr.VerdictReturn})
	default:
		return nil, fmt.Errorf("unknown action %d", r.Action)
	}
	return e, nil
}

// listNAT returns the rules of the family's virtnet_nat table as
// "CHAIN: RULE" lines in nft syntax without counter values (see
// [netdriver.NATRule.String]), chains in netdriver.NATChains order and then any other chain by
// name, rules in kernel order. It decodes what the kernel holds, so rules
// someone else added to the table show up too (unknown expressions as
// "<TYPE>"). No table: nil, nil.
func listNAT(conn *nftables.Conn, family netdriver.Family) ([]string, error) {
	table := natTable(family)
	wrap := func(err error) error {
		return fmt.Errorf("netdriver: list NAT table %s %s: %w", familyName(family), netdriver.NATTable, err)
	}
	tables, err := conn.ListTablesOfFamily(table.Family)
	if err != nil {
		return nil, wrap(err)
	}
	if !slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == netdriver.NATTable }) {
		return nil, nil
	}
	chains, err := conn.ListChainsOfTableFamily(table.Family)
	if err != nil {
		return nil, wrap(err)
	}
	rank := func(name string) int {
		if i := slices.Index(netdriver.NATChains(), name); i >= 0 {
			return i
		}
		return len(netdriver.NATChains())
	}
	chains = slices.DeleteFunc(chains, func(c *nftables.Chain) bool { return c.Table.Name != netdriver.NATTable })
	slices.SortStableFunc(chains, func(a, b *nftables.Chain) int {
		return cmp.Or(cmp.Compare(rank(a.Name), rank(b.Name)), strings.Compare(a.Name, b.Name))
	})
	lines := []string{}
	for _, c := range chains {
		rules, err := conn.GetRules(table, c)
		if err != nil {
			return nil, wrap(fmt.Errorf("chain %s: %w", c.Name, err))
		}
		for _, r := range rules {
			text, err := natRuleText(conn, table, family, r.Exprs)
			if err != nil {
				return nil, wrap(fmt.Errorf("chain %s: rule handle %d: %w", c.Name, r.Handle, err))
			}
			lines = append(lines, c.Name+": "+text)
		}
	}
	return lines, nil
}

// natRuleText decodes the expressions of a rule into nft syntax. It knows
// the shapes natExprs produces; anything else is printed as its Go type.
func natRuleText(conn *nftables.Conn, table *nftables.Table, family netdriver.Family, exprs []expr.Any) (string, error) {
	l3 := familyName(family)
	var (
		out    []string
		loaded string // what register 1 holds, in nft syntax ("ip saddr")
		proto  string // a pending `meta l4proto` match
		imm    []byte // an immediate loaded into register 1
	)
	flushProto := func() {
		if proto != "" {
			out = append(out, "meta l4proto "+proto)
			proto = ""
		}
	}
	for _, x := range exprs {
		// A pending l4proto match folds into a following "tcp dport".
		if p, ok := x.(*expr.Payload); !ok || p.Base != expr.PayloadBaseTransportHeader {
			flushProto()
		}
		switch x := x.(type) {
		case *expr.Meta:
			switch x.Key {
			case expr.MetaKeyIIFNAME:
				loaded = "iifname"
			case expr.MetaKeyOIFNAME:
				loaded = "oifname"
			case expr.MetaKeyL4PROTO:
				loaded = "meta l4proto"
			default:
				loaded = "meta " + strconv.Itoa(int(x.Key))
			}
		case *expr.Payload:
			loaded, proto = payloadText(l3, x, proto), ""
		case *expr.Cmp:
			op := ""
			if x.Op != expr.CmpOpEq {
				op = "!= " // the only other operator a rule of ours could hold
			}
			value := valueText(loaded, x.Data)
			if loaded == "meta l4proto" && op == "" {
				proto = value
				continue
			}
			out = append(out, loaded+" "+op+value)
		case *expr.Lookup:
			elems, err := setText(conn, table, loaded, x.SetName)
			if err != nil {
				return "", err
			}
			op := ""
			if x.Invert {
				op = "!= "
			}
			out = append(out, loaded+" "+op+elems)
		case *expr.Counter:
			out = append(out, "counter")
		case *expr.Masq:
			out = append(out, "masquerade")
		case *expr.Immediate:
			imm = x.Data
		case *expr.NAT:
			verb := "snat"
			if x.Type == expr.NATTypeDestNAT {
				verb = "dnat"
			}
			a, _ := netip.AddrFromSlice(imm)
			out = append(out, verb+" to "+a.String())
		case *expr.Verdict:
			v := cmp.Or(verdicts[x.Kind], "verdict "+strconv.Itoa(int(x.Kind)))
			if x.Kind == expr.VerdictJump || x.Kind == expr.VerdictGoto {
				v += " " + x.Chain
			}
			out = append(out, v)
		default:
			out = append(out, fmt.Sprintf("<%T>", x))
		}
	}
	flushProto()
	return strings.Join(out, " "), nil
}

// verdicts are the nft names of the verdicts.
var verdicts = map[expr.VerdictKind]string{expr.VerdictJump: "jump", expr.VerdictGoto: "goto",
	expr.VerdictReturn: "return", expr.VerdictAccept: "accept", expr.VerdictDrop: "drop"}

// payloadText names a payload load in nft syntax.
func payloadText(l3 string, p *expr.Payload, proto string) string {
	switch {
	case p.Base == expr.PayloadBaseNetworkHeader && l3 == "ip" && p.Offset == ip4SaddrOffset && p.Len == 4,
		p.Base == expr.PayloadBaseNetworkHeader && l3 == "ip6" && p.Offset == ip6SaddrOffset && p.Len == 16:
		return l3 + " saddr"
	case p.Base == expr.PayloadBaseNetworkHeader && l3 == "ip" && p.Offset == ip4DaddrOffset && p.Len == 4,
		p.Base == expr.PayloadBaseNetworkHeader && l3 == "ip6" && p.Offset == ip6DaddrOffset && p.Len == 16:
		return l3 + " daddr"
	case p.Base == expr.PayloadBaseTransportHeader && p.Offset == dportOffset && p.Len == 2:
		if proto == "" {
			proto = "th"
		}
		return proto + " dport"
	}
	return fmt.Sprintf("@payload,%d,%d,%d", p.Base, p.Offset*8, p.Len*8)
}

// valueText prints a compared value according to what was loaded.
func valueText(loaded string, data []byte) string {
	switch {
	case loaded == "iifname" || loaded == "oifname":
		return strconv.Quote(strings.TrimRight(string(data), "\x00"))
	case loaded == "meta l4proto" && len(data) == 1:
		switch data[0] {
		case unix.IPPROTO_TCP:
			return "tcp"
		case unix.IPPROTO_UDP:
			return "udp"
		}
		return strconv.Itoa(int(data[0]))
	case strings.HasSuffix(loaded, "dport") && len(data) == 2:
		return strconv.Itoa(int(binary.BigEndian.Uint16(data)))
	case strings.HasSuffix(loaded, "addr"):
		if a, ok := netip.AddrFromSlice(data); ok {
			return a.String()
		}
	}
	return fmt.Sprintf("0x%x", data)
}

// setText prints the elements of a (normally anonymous) set, sorted; an
// interval set's ranges as `FIRST-LAST` (one port alone when a range holds
// one), as netdriver.NATRule.String prints them.
func setText(conn *nftables.Conn, table *nftables.Table, loaded, name string) (string, error) {
	set, err := conn.GetSetByName(table, name)
	if err != nil {
		return "", fmt.Errorf("set %s: %w", name, err)
	}
	elems, err := conn.GetSetElements(set)
	if err != nil {
		return "", fmt.Errorf("set %s: elements: %w", name, err)
	}
	if !set.Anonymous {
		return "@" + name, nil
	}
	slices.SortFunc(elems, func(a, b nftables.SetElement) int { return slices.Compare(a.Key, b.Key) })
	var texts []string
	if set.Interval && strings.HasSuffix(loaded, "dport") {
		// Sorted, a range is a start and the end one past its last port
		// (or none: up to 65535). A leading end element (key 0) closes
		// nothing.
		for i := 0; i < len(elems); i++ {
			if elems[i].IntervalEnd || len(elems[i].Key) != 2 {
				continue
			}
			first := binary.BigEndian.Uint16(elems[i].Key)
			last := uint16(65535)
			if i+1 < len(elems) && elems[i+1].IntervalEnd && len(elems[i+1].Key) == 2 {
				last = binary.BigEndian.Uint16(elems[i+1].Key) - 1
				i++
			}
			text := strconv.Itoa(int(first))
			if last != first {
				text += "-" + strconv.Itoa(int(last))
			}
			texts = append(texts, text)
		}
	} else {
		for _, el := range elems {
			if !el.IntervalEnd {
				texts = append(texts, valueText(loaded, el.Key))
			}
		}
	}
	return "{ " + strings.Join(texts, ", ") + " }", nil
}
