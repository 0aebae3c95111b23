//go:build !linux

package dpserver

import (
	"context"

	"github.com/virtnet/virtnet/internal/errclass"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

// ErrNotSupported is returned by [NewNetlinkKernel] outside Linux.
var ErrNotSupported = errclass.ErrNotSupported

// NetlinkKernel is unavailable outside Linux.
type NetlinkKernel struct{}

// NewNetlinkKernel returns [ErrNotSupported] outside Linux.
func NewNetlinkKernel(string) (*NetlinkKernel, error) { return nil, ErrNotSupported }

// Close does nothing.
func (*NetlinkKernel) Close() error { return nil }

// LowerHealthy returns [ErrNotSupported].
func (*NetlinkKernel) LowerHealthy(context.Context, string) (bool, string, error) {
	return false, "", ErrNotSupported
}

// Ensure returns [ErrNotSupported].
func (*NetlinkKernel) Ensure(context.Context, deviceplugin.Slot) (int, error) {
	return 0, ErrNotSupported
}

// Remove returns [ErrNotSupported].
func (*NetlinkKernel) Remove(context.Context, string) error { return ErrNotSupported }

// Exists returns [ErrNotSupported].
func (*NetlinkKernel) Exists(context.Context, string) (bool, error) { return false, ErrNotSupported }
