// Package errclass holds the one helper that lets a package sentinel say
// it is permanent: [Permanent] returns an error value with the method
// Permanent() bool that phase1.IsPermanent asks of every error in a
// chain. Types with fields implement the method themselves; this is for
// the sentinels.
package errclass

// permanent is a pointer type, so that each sentinel is equal only to
// itself (two sentinels with the same text stay apart for errors.Is).
type permanent struct{ msg string }

func (p *permanent) Error() string { return p.msg }

// Permanent reports true.
func (*permanent) Permanent() bool { return true }

// Permanent returns a new sentinel error whose condition a re-run cannot
// change.
func Permanent(msg string) error { return &permanent{msg: msg} }

// ErrNotSupported is the module's one "not on this OS" sentinel: the
// packages that name it (netdriver, phase1, nsexec, the macvtap programs)
// all hold this value, so that one errors.Is works everywhere.
var ErrNotSupported = Permanent("not supported on this OS (network namespaces and netlink need Linux)")
