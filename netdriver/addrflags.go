package netdriver

import "net/netip"

// FlaggedAddr is an address with its IFA_F_* flags as the kernel reports
// them (`ip addr` shows 0x80, IFA_F_PERMANENT, as nothing; 0x02 as
// "nodad"; 0x200 as "noprefixroute").
type FlaggedAddr struct {
	Prefix netip.Prefix
	Flags  uint32
}

// SettableAddrFlags are the IFA_F_* flags an address can be given
// (nodad, optimistic, home, mngtmpaddr, noprefixroute, autojoin); the
// others (permanent, tentative, deprecated, …) are the kernel's state.
const SettableAddrFlags uint32 = 0x02 | 0x04 | 0x10 | 0x100 | 0x200 | 0x400

// IFA_F_TENTATIVE and IFA_F_DADFAILED, for callers that wait for
// duplicate address detection.
const (
	AddrFlagTentative uint32 = 0x40
	AddrFlagDADFailed uint32 = 0x08
)
