package dhcp

import (
	"bytes"
	"log/slog"
	"net"
	"net/netip"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
)

// Handler6 maps one DHCPv6 message to its reply: the VM's address in an
// IA_NA, with the server's DUID-LL, the pod's IPv6 nameservers (option 23)
// and search list (option 24). It is safe for concurrent use and touches
// no socket.
//
// Like [Handler4] it answers only the VM's MAC (when the configuration
// names one). A DHCPv6 message does not carry the sender's MAC, so a
// client counts as the VM when any of these shows the VM's MAC: its DUID
// (DUID-LL or DUID-LLT of Ethernet), its link-local source address (a
// modified EUI-64 interface identifier), or the namespace's neighbour
// entry for that source address (see [Handler6.SetNeighbors]).
type Handler6 struct {
	cfg      *Config
	log      *slog.Logger
	serverID dhcpv6.DUID
	lifetime dhcpv6.OptIAAddress
	dns      []net.IP
	neigh    func(netip.Addr) net.HardwareAddr
	foreign  foreignClients
}

// NewHandler6 returns the DHCPv6 handler for cfg.IPv6 (which must be set),
// identifying the server by a DUID-LL made of serverMAC (the bridge's MAC).
// log receives one line per ignored client (bounded, rate-limited) and
// one per reply at debug level; nil discards.
func NewHandler6(cfg *Config, serverMAC net.HardwareAddr, log *slog.Logger) *Handler6 {
	return &Handler6{
		cfg:      cfg,
		log:      limited(log),
		serverID: &dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: serverMAC},
		lifetime: dhcpv6.OptIAAddress{
			IPv6Addr:          cfg.IPv6.Address.Addr().AsSlice(),
			PreferredLifetime: cfg.Lease,
			ValidLifetime:     cfg.Lease,
		},
		dns: ips(cfg.IPv6.DNS),
	}
}

// SetNeighbors gives the handler a lookup of the MAC of an IPv6 neighbour
// on the bridge (the kernel's neighbour table): clients whose DUID and
// link-local address do not show their MAC are then recognised by it. Call
// it before the first Handle.
func (h *Handler6) SetNeighbors(lookup func(netip.Addr) net.HardwareAddr) { h.neigh = lookup }

// Handle returns the reply to msg received from peer (the client's source
// address), or nil: relayed messages, messages without a client ID, from
// a client that is not the VM, or addressed to another server's DUID get
// none. Solicit gets an Advertise (a Reply with rapid commit); Request,
// Renew, Rebind, Confirm, Release and Information-Request get a Reply.
// Every reply but Information-Request's carries the VM's address in an
// IA_NA with the IAID the client sent.
func (h *Handler6) Handle(peer netip.Addr, msg dhcpv6.DHCPv6) dhcpv6.DHCPv6 {
	m, ok := msg.(*dhcpv6.Message)
	if !ok || m == nil {
		return nil // relay messages: not on a single-client bridge
	}
	cid := m.Options.ClientID()
	if cid == nil {
		return nil
	}
	if !h.fromVM(peer, cid) {
		h.foreign.log(h.log, "dhcpv6", h.cfg.Bridge, string(cid.ToBytes()), "peer", peer.String(), "duid", cid.String(), "vmMAC", h.cfg.MAC.String())
		return nil
	}
	if sid := m.Options.ServerID(); sid != nil && !sid.Equal(h.serverID) {
		return nil
	}
	mods := []dhcpv6.Modifier{dhcpv6.WithServerID(h.serverID)}
	if m.MessageType != dhcpv6.MessageTypeInformationRequest && m.MessageType != dhcpv6.MessageTypeRelease {
		var iaid [4]byte
		if ia := m.Options.OneIANA(); ia != nil {
			iaid = ia.IaId
		}
		mods = append(mods, dhcpv6.WithIAID(iaid), dhcpv6.WithIANA(h.lifetime))
	}
	if m.MessageType != dhcpv6.MessageTypeRelease {
		if len(h.dns) > 0 {
			mods = append(mods, dhcpv6.WithDNS(h.dns...))
		}
		if len(h.cfg.Search) > 0 {
			mods = append(mods, dhcpv6.WithDomainSearchList(h.cfg.Search...))
		}
	}
	build := dhcpv6.NewReplyFromMessage
	switch m.MessageType {
	case dhcpv6.MessageTypeSolicit:
		if m.GetOneOption(dhcpv6.OptionRapidCommit) == nil {
			build = dhcpv6.NewAdvertiseFromSolicit
		}
	case dhcpv6.MessageTypeRequest, dhcpv6.MessageTypeRenew, dhcpv6.MessageTypeRebind,
		dhcpv6.MessageTypeConfirm, dhcpv6.MessageTypeRelease, dhcpv6.MessageTypeInformationRequest:
	default:
		return nil
	}
	r, err := build(m, mods...)
	if err != nil {
		h.log.Debug("dhcpv6: no reply", "interface", h.cfg.Bridge, "type", m.MessageType.String(), "err", err)
		return nil
	}
	h.log.Debug("dhcpv6: reply", "interface", h.cfg.Bridge, "request", m.MessageType.String(), "reply", r.MessageType.String())
	return r
}

// fromVM reports whether the client is the VM: see [Handler6].
func (h *Handler6) fromVM(peer netip.Addr, cid dhcpv6.DUID) bool {
	vm := h.cfg.MAC
	if vm == nil || bytes.Equal(duidMAC(cid), vm) || bytes.Equal(eui64MAC(peer), vm) {
		return true
	}
	// nil (no MAC found) never equals the VM's 6 bytes.
	return h.neigh != nil && peer.IsValid() && bytes.Equal(h.neigh(peer), vm)
}

// duidMAC is the Ethernet address of a DUID-LL or DUID-LLT, else nil.
func duidMAC(d dhcpv6.DUID) net.HardwareAddr {
	switch d := d.(type) {
	case *dhcpv6.DUIDLL:
		if d.HWType == iana.HWTypeEthernet && len(d.LinkLayerAddr) == 6 {
			return d.LinkLayerAddr
		}
	case *dhcpv6.DUIDLLT:
		if d.HWType == iana.HWTypeEthernet && len(d.LinkLayerAddr) == 6 {
			return d.LinkLayerAddr
		}
	}
	return nil
}

// eui64MAC is the MAC a link-local address was derived from by modified
// EUI-64 (RFC 4291 appendix A), else nil.
func eui64MAC(a netip.Addr) net.HardwareAddr {
	if !a.Is6() || !a.IsLinkLocalUnicast() {
		return nil
	}
	b := a.As16()
	if b[11] != 0xff || b[12] != 0xfe {
		return nil
	}
	return net.HardwareAddr{b[8] ^ 0x02, b[9], b[10], b[13], b[14], b[15]}
}
