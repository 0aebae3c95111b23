package dhcp

import (
	"log/slog"
	"net"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/iana"
)

// Handler6 maps one DHCPv6 message to its reply: the VM's address in an
// IA_NA, with the server's DUID-LL. It is safe for concurrent use and
// touches no socket.
//
// Unlike [Handler4] it answers any client: a DUID need not carry the MAC,
// and DHCPv6 is served only for masquerade, whose bridge has the VM's tap
// as its one other port.
type Handler6 struct {
	cfg      *Config6
	log      *slog.Logger
	bridge   string
	serverID dhcpv6.DUID
	lifetime dhcpv6.OptIAAddress
}

// NewHandler6 returns the DHCPv6 handler for cfg.IPv6 (which must be set),
// identifying the server by a DUID-LL made of serverMAC (the bridge's MAC).
func NewHandler6(cfg *Config, serverMAC net.HardwareAddr, log *slog.Logger) *Handler6 {
	return &Handler6{
		cfg:      cfg.IPv6,
		log:      log,
		bridge:   cfg.Bridge,
		serverID: &dhcpv6.DUIDLL{HWType: iana.HWTypeEthernet, LinkLayerAddr: serverMAC},
		lifetime: dhcpv6.OptIAAddress{
			IPv6Addr:          cfg.IPv6.Address.Addr().AsSlice(),
			PreferredLifetime: cfg.Lease,
			ValidLifetime:     cfg.Lease,
		},
	}
}

// Handle returns the reply to msg, or nil: relayed messages, messages
// without a client ID, or addressed to another server's DUID get none.
// Solicit gets an Advertise (a Reply with rapid commit); Request, Renew,
// Rebind, Confirm, Release and Information-Request get a Reply. Every
// reply but Information-Request's carries the VM's address in an IA_NA with
// the IAID the client sent.
func (h *Handler6) Handle(msg dhcpv6.DHCPv6) dhcpv6.DHCPv6 {
	m, ok := msg.(*dhcpv6.Message)
	if !ok || m == nil {
		return nil // relay messages: not on a single-client bridge
	}
	if m.Options.ClientID() == nil {
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
	var (
		r   *dhcpv6.Message
		err error
	)
	switch m.MessageType {
	case dhcpv6.MessageTypeSolicit:
		if m.GetOneOption(dhcpv6.OptionRapidCommit) != nil {
			r, err = dhcpv6.NewReplyFromMessage(m, mods...)
		} else {
			r, err = dhcpv6.NewAdvertiseFromSolicit(m, mods...)
		}
	case dhcpv6.MessageTypeRequest, dhcpv6.MessageTypeRenew, dhcpv6.MessageTypeRebind,
		dhcpv6.MessageTypeConfirm, dhcpv6.MessageTypeRelease, dhcpv6.MessageTypeInformationRequest:
		r, err = dhcpv6.NewReplyFromMessage(m, mods...)
	default:
		return nil
	}
	if err != nil {
		h.log.Debug("dhcpv6: no reply", "interface", h.bridge, "type", m.MessageType.String(), "err", err)
		return nil
	}
	h.log.Debug("dhcpv6: reply", "interface", h.bridge, "request", m.MessageType.String(), "reply", r.MessageType.String())
	return r
}
