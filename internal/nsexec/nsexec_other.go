//go:build !linux

package nsexec

import "errors"

// ErrNotSupported is returned for a namespace path off Linux.
var ErrNotSupported = errors.New("nsexec: network namespaces need Linux")

// Do runs fn where the caller is when nsPath is "", and fails otherwise:
// network namespaces exist only on Linux.
func Do(nsPath string, fn func() error) error {
	if nsPath == "" {
		return fn()
	}
	return ErrNotSupported
}
