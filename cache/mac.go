package cache

import (
	"fmt"
	"net"
)

// MAC is a 48-bit MAC address. The zero value is no address: it is
// written as "" and is what "" reads as, so that an all-zero address
// (00:00:00:00:00:00) stays apart from none.
type MAC struct {
	addr [6]byte
	set  bool
}

// ParseMAC parses a 48-bit MAC address in any form [net.ParseMAC]
// accepts; "" is the zero MAC.
func ParseMAC(s string) (MAC, error) {
	if s == "" {
		return MAC{}, nil
	}
	hw, err := net.ParseMAC(s)
	if err != nil {
		return MAC{}, err
	}
	m, ok := MACFrom(hw)
	if !ok {
		return MAC{}, fmt.Errorf("%q is a %d-byte address, not a 48-bit MAC", s, len(hw))
	}
	return m, nil
}

// MustParseMAC is [ParseMAC] for constants; it panics on an error.
func MustParseMAC(s string) MAC {
	m, err := ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// MACFrom converts a hardware address: an empty one is the zero MAC, one
// of 6 bytes its MAC; any other length is refused (ok false).
func MACFrom(hw net.HardwareAddr) (m MAC, ok bool) {
	switch len(hw) {
	case 0:
		return MAC{}, true
	case 6:
		return MAC{addr: [6]byte(hw), set: true}, true
	}
	return MAC{}, false
}

// IsValid reports whether m is an address (not the zero value).
func (m MAC) IsValid() bool { return m.set }

// HardwareAddr returns m as a new net.HardwareAddr, nil for the zero MAC.
func (m MAC) HardwareAddr() net.HardwareAddr {
	if !m.set {
		return nil
	}
	return net.HardwareAddr(m.addr[:])
}

// String is the lower-case colon form ("0a:58:0a:f4:01:07"), "" for the
// zero MAC.
func (m MAC) String() string { return m.HardwareAddr().String() }

// MarshalText writes [MAC.String].
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads what [ParseMAC] accepts.
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
