package macvtap

import (
	"errors"
	"fmt"
)

// Mode is a macvtap operating mode, as `ip link add ... type macvtap mode
// MODE` spells it.
type Mode string

// The macvtap modes this project accepts. kubevirt/macvtap-cni accepts
// bridge, vepa and private; passthru is accepted here too (one macvtap owns
// the lower device), the "source" mode is not (it needs a MAC allow-list).
const (
	// ModeBridge lets macvtaps on the same lower device talk to each other
	// directly; the default.
	ModeBridge Mode = "bridge"
	// ModeVEPA sends all traffic out through the lower device, even between
	// macvtaps on it (the switch has to hairpin it back).
	ModeVEPA Mode = "vepa"
	// ModePrivate is VEPA without the hairpin: macvtaps on one lower device
	// never see each other.
	ModePrivate Mode = "private"
	// ModePassthru hands the whole lower device to one macvtap.
	ModePassthru Mode = "passthru"
)

// DefaultMode is the mode used when none is configured.
const DefaultMode = ModeBridge

// ErrUnknownMode is returned (wrapped) for a mode outside [Modes].
var ErrUnknownMode = errors.New("unknown macvtap mode")

// Modes lists the accepted modes, default first.
func Modes() []Mode { return []Mode{ModeBridge, ModeVEPA, ModePrivate, ModePassthru} }

// ParseMode returns the mode named by s; the empty string means
// [DefaultMode], as in kubevirt/macvtap-cni.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return DefaultMode, nil
	}
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w %q (want one of bridge, vepa, private, passthru)", ErrUnknownMode, s)
}
