package dhcp

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/insomniacslk/dhcp/rfc1035label"
)

// maxForeignLogged bounds the set of foreign MACs remembered for
// log-once: past it, one more line says logging stopped.
const maxForeignLogged = 64

// Handler4 maps one DHCPv4 request to its reply. It is safe for concurrent
// use and touches no socket.
type Handler4 struct {
	cfg  *Config
	log  *slog.Logger
	opts []dhcpv4.Option // options of OFFER and ACK, encoded once, by priority

	foreign foreignClients
}

// NewHandler4 encodes the configuration's options once and returns the
// handler. log receives one line per ignored client MAC (bounded), per NAK
// and per reply at debug level, each message rate-limited (10 lines, then
// one per 10s); nil discards.
func NewHandler4(cfg *Config, log *slog.Logger) *Handler4 {
	opts := Options4(cfg)
	slices.SortStableFunc(opts, func(a, b dhcpv4.Option) int { return cmp.Compare(rank4(a.Code.Code()), rank4(b.Code.Code())) })
	return &Handler4{cfg: cfg, log: limited(log), opts: opts}
}

// Sizes of a reply: RFC 2131 says every client accepts 576-byte IP
// datagrams, and option 57 may raise (never lower) that; the DHCP message
// is what remains after the IP and UDP headers, and its options start
// after the fixed 236-byte header and the 4-byte magic cookie.
const (
	minMaxMessageSize = 576
	ipUDPHeaders      = 20 + 8
	fixedHeader       = 236 + 4
)

// rank4 orders the options of an OFFER or ACK by importance, for dropping
// the least important when the reply does not fit the client's maximum
// message size. Rank 0 is never dropped: mask, router, lease time and
// server identifier make the lease. Then classless routes (dropping them
// would change the guest's routing), DNS, MTU, search list, domain name,
// hostname, NTP, TFTP server, boot file, and the private options last, in
// the order the VMI lists them.
func rank4(code uint8) int {
	switch code {
	case 1, 3, 51, 54:
		return 0
	}
	if i := slices.Index(optionRanks, code); i >= 0 {
		return i + 1
	}
	return len(optionRanks) + 1
}

// optionRanks are the options of rank 1 and up, in rank4's order.
var optionRanks = []uint8{121, 6, 26, 119, 15, 12, 42, 66, 67}

// optionSize is the encoded size of one option, split in pieces of 255
// bytes as RFC 3396 does for long values.
func optionSize(value []byte) int {
	if len(value) == 0 {
		return 2
	}
	return len(value) + 2*((len(value)+254)/255)
}

// maxMessageSize is the largest DHCP message (without IP and UDP headers)
// the client accepts: its option 57, at least 576, at most the bridge's
// MTU when known.
func (h *Handler4) maxMessageSize(req *dhcpv4.DHCPv4) int {
	n := minMaxMessageSize
	if v, err := req.MaxMessageSize(); err == nil && int(v) > n {
		n = int(v)
	}
	if h.cfg.MTU != 0 && int(h.cfg.MTU) >= minMaxMessageSize && n > int(h.cfg.MTU) {
		n = int(h.cfg.MTU)
	}
	return n - ipUDPHeaders
}

// fit returns the options of a reply to req that fit its maximum message
// size, and the codes it left out. Options the client asked for (option
// 55) are kept before the others; within each group the order of rank4
// holds, and each option that still fits is kept.
func (h *Handler4) fit(req *dhcpv4.DHCPv4, used int) ([]dhcpv4.Option, []int) {
	budget := h.maxMessageSize(req) - used
	var requested [256]bool
	for _, c := range req.ParameterRequestList() {
		requested[c.Code()] = true
	}
	out := make([]dhcpv4.Option, 0, len(h.opts))
	var dropped []int
	take := func(o dhcpv4.Option) {
		if n := optionSize(o.Value.ToBytes()); rank4(o.Code.Code()) == 0 || n <= budget {
			budget -= n
			out = append(out, o)
		} else {
			dropped = append(dropped, int(o.Code.Code()))
		}
	}
	for _, first := range []bool{true, false} {
		for _, o := range h.opts {
			if (rank4(o.Code.Code()) == 0 || requested[o.Code.Code()]) == first {
				take(o)
			}
		}
	}
	return out, dropped
}

// Options4 returns the options every OFFER and ACK carries besides the
// message type, in option-code order.
func Options4(c *Config) []dhcpv4.Option {
	var o []dhcpv4.Option
	o = append(o, dhcpv4.OptSubnetMask(net.CIDRMask(c.Address.Bits(), 32)))
	if c.Router.IsValid() {
		o = append(o, dhcpv4.OptRouter(c.Router.AsSlice()))
	}
	if len(c.DNS) > 0 {
		o = append(o, dhcpv4.OptDNS(ips(c.DNS)...))
	}
	if c.Hostname != "" {
		o = append(o, dhcpv4.OptHostName(c.Hostname))
	}
	if c.DomainName != "" {
		o = append(o, dhcpv4.OptDomainName(c.DomainName))
	}
	if c.MTU != 0 {
		o = append(o, dhcpv4.OptGeneric(dhcpv4.OptionInterfaceMTU, binary.BigEndian.AppendUint16(nil, c.MTU)))
	}
	if len(c.NTPServers) > 0 {
		o = append(o, dhcpv4.OptNTPServers(ips(c.NTPServers)...))
	}
	o = append(o, dhcpv4.OptIPAddressLeaseTime(c.Lease))
	o = append(o, dhcpv4.OptServerIdentifier(c.ServerID.AsSlice()))
	if c.TFTPServerName != "" {
		o = append(o, dhcpv4.OptTFTPServerName(c.TFTPServerName))
	}
	if c.BootFileName != "" {
		o = append(o, dhcpv4.OptBootFileName(c.BootFileName))
	}
	if len(c.Search) > 0 {
		o = append(o, dhcpv4.OptGeneric(dhcpv4.OptionDNSDomainSearchList, searchBytes(c.Search)))
	}
	if len(c.Routes) > 0 {
		rs := make(dhcpv4.Routes, 0, len(c.Routes))
		for _, r := range c.Routes {
			rs = append(rs, &dhcpv4.Route{
				Dest:   &net.IPNet{IP: r.Dst.Addr().AsSlice(), Mask: net.CIDRMask(r.Dst.Bits(), 32)},
				Router: r.Gateway.AsSlice(),
			})
		}
		o = append(o, dhcpv4.OptClasslessStaticRoute(rs...))
	}
	for _, p := range c.Private {
		o = append(o, dhcpv4.OptGeneric(dhcpv4.GenericOptionCode(p.Code), []byte(p.Value)))
	}
	// Encode every value now: the library's label type is not safe for
	// concurrent ToBytes, and replies then only copy bytes.
	for i := range o {
		o[i] = dhcpv4.OptGeneric(o[i].Code, o[i].Value.ToBytes())
	}
	return o
}

func ips(as []netip.Addr) []net.IP {
	out := make([]net.IP, len(as))
	for i, a := range as {
		out[i] = a.AsSlice()
	}
	return out
}

// searchBytes is the RFC 1035 encoding of option 119 (no compression).
func searchBytes(ds []string) []byte {
	if len(ds) == 0 {
		return nil
	}
	return (&rfc1035label.Labels{Labels: ds}).ToBytes()
}

// Handle returns the reply to req, or nil when req gets none: not a
// BOOTREQUEST from an Ethernet client, another client's MAC, relayed,
// addressed to another server, or a message type other than DISCOVER and
// REQUEST. DISCOVER gets an OFFER of the VM's address; a REQUEST for that
// address gets an ACK, for any other a NAK.
func (h *Handler4) Handle(req *dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
	if req == nil || req.OpCode != dhcpv4.OpcodeBootRequest ||
		req.HWType != iana.HWTypeEthernet || len(req.ClientHWAddr) != 6 {
		return nil
	}
	if h.cfg.MAC != nil && !bytes.Equal(req.ClientHWAddr, h.cfg.MAC) {
		h.foreign.log(h.log, "dhcp", h.cfg.Bridge, string(req.ClientHWAddr), "mac", req.ClientHWAddr.String(), "vmMAC", h.cfg.MAC.String())
		return nil
	}
	if gi := req.GatewayIPAddr; gi != nil && !gi.IsUnspecified() {
		return nil // single-client server on a bridge: no relays
	}
	vmIP := h.cfg.Address.Addr().AsSlice()
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		return h.reply(req, dhcpv4.MessageTypeOffer, vmIP)
	case dhcpv4.MessageTypeRequest:
		if sid := req.ServerIdentifier(); sid != nil && !sid.Equal(h.cfg.ServerID.AsSlice()) {
			return nil // the client chose another server
		}
		want := req.RequestedIPAddress()
		if want == nil || want.IsUnspecified() {
			want = req.ClientIPAddr // RENEWING/REBINDING: ciaddr
		}
		if want == nil || !want.Equal(vmIP) {
			h.log.Info("dhcp: NAK: requested address is not the VM's", "interface", h.cfg.Bridge,
				"mac", req.ClientHWAddr.String(), "requested", want.String(), "offered", h.cfg.Address.Addr().String())
			return h.reply(req, dhcpv4.MessageTypeNak, nil)
		}
		return h.reply(req, dhcpv4.MessageTypeAck, vmIP)
	default:
		return nil
	}
}

func (h *Handler4) reply(req *dhcpv4.DHCPv4, typ dhcpv4.MessageType, yiaddr net.IP) *dhcpv4.DHCPv4 {
	r := &dhcpv4.DHCPv4{
		OpCode:        dhcpv4.OpcodeBootReply,
		HWType:        req.HWType,
		TransactionID: req.TransactionID,
		Flags:         req.Flags,
		ClientHWAddr:  req.ClientHWAddr,
		ClientIPAddr:  net.IPv4zero,
		YourIPAddr:    net.IPv4zero,
		ServerIPAddr:  net.IPv4zero,
		GatewayIPAddr: net.IPv4zero,
		Options:       make(dhcpv4.Options, len(h.opts)+2),
	}
	if cid := req.Options.Get(dhcpv4.OptionClientIdentifier); cid != nil { // RFC 6842
		r.UpdateOption(dhcpv4.OptGeneric(dhcpv4.OptionClientIdentifier, cid))
	}
	r.UpdateOption(dhcpv4.OptMessageType(typ))
	if typ == dhcpv4.MessageTypeNak {
		r.UpdateOption(dhcpv4.OptServerIdentifier(h.cfg.ServerID.AsSlice()))
		return r
	}
	if typ == dhcpv4.MessageTypeAck {
		r.ClientIPAddr = req.ClientIPAddr
	}
	r.YourIPAddr = yiaddr
	used := fixedHeader + 1 // the End option
	for _, v := range r.Options {
		used += optionSize(v)
	}
	opts, dropped := h.fit(req, used)
	for _, o := range opts {
		r.UpdateOption(o)
	}
	if len(dropped) > 0 {
		h.log.Warn("dhcp: options left out to fit the client's maximum message size", "interface", h.cfg.Bridge,
			"mac", req.ClientHWAddr.String(), "maxMessageSize", h.maxMessageSize(req)+ipUDPHeaders, "dropped", dropped)
	}
	h.log.Debug("dhcp: reply", "interface", h.cfg.Bridge, "type", typ.String(), "mac", req.ClientHWAddr.String())
	return r
}

// foreignClients logs each client the server does not answer once, and at
// most maxForeignLogged of them.
type foreignClients struct {
	mu   sync.Mutex
	seen map[string]struct{}
	full bool
}

// log logs the client key with msg and attrs, unless it was logged before
// or too many were; proto prefixes the message ("dhcp", "dhcpv6").
func (f *foreignClients) log(log *slog.Logger, proto, bridge, key string, attrs ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.seen[key]; ok || f.full {
		return
	}
	if len(f.seen) >= maxForeignLogged {
		f.full = true
		log.Warn(proto+": too many foreign clients, no longer logging them", "interface", bridge, "limit", maxForeignLogged)
		return
	}
	if f.seen == nil {
		f.seen = map[string]struct{}{}
	}
	f.seen[key] = struct{}{}
	log.Warn(proto+": ignoring client that is not the VM", append([]any{"interface", bridge}, attrs...)...)
}
