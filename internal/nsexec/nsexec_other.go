//go:build !linux

package nsexec

import (
	"errors"

	"github.com/virtnet/virtnet/internal/errclass"
)

// ErrNotSupported is returned for a namespace path off Linux.
var ErrNotSupported = errclass.ErrNotSupported

// Do runs fn where the caller is when nsPath is "", and fails otherwise:
// network namespaces exist only on Linux.
func Do(nsPath string, fn func() error) error {
	if nsPath == "" {
		return fn()
	}
	return ErrNotSupported
}

// ErrClosed is returned by [Thread.Do] after [Thread.Close].
var ErrClosed = errors.New("nsexec: thread closed")

// Thread stands for an OS thread inside a network namespace; off Linux
// none can be started.
type Thread struct{}

// Start fails off Linux: network namespaces need Linux.
func Start(nsPath string) (*Thread, error) { return nil, ErrNotSupported }

// StartFd fails off Linux: network namespaces need Linux.
func StartFd(fd int, name string) (*Thread, error) { return nil, ErrNotSupported }

// Do returns [ErrNotSupported].
func (t *Thread) Do(fn func() error) error { return ErrNotSupported }

// Close does nothing.
func (t *Thread) Close() {}
