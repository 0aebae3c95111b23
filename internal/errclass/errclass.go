// Package errclass holds the one helper that lets a package sentinel say
// it is permanent: a [Permanent] is an error value (comparable, so
// errors.Is matches it) with the method Permanent() bool that
// phase1.IsPermanent asks of every error in a chain. Types with fields
// implement the method themselves; this is for the sentinels.
package errclass

// Permanent is a sentinel error whose condition a re-run cannot change.
type Permanent string

func (p Permanent) Error() string { return string(p) }

// Permanent reports true.
func (Permanent) Permanent() bool { return true }
