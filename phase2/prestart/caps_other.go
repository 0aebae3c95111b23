//go:build !linux

package prestart

// HasNetAdmin reports false where there are no Linux capabilities: the
// default interface type is then the tap phase1 made.
func HasNetAdmin() (bool, error) { return false, nil }
