//go:build !linux

package deviceplugin

import (
	"context"

	"github.com/virtnet/virtnet/internal/errclass"
)

// ErrNotSupported is returned by [NewNetlinkLister] on systems without
// rtnetlink.
var ErrNotSupported = errclass.ErrNotSupported

// NetlinkLister is unavailable outside Linux.
type NetlinkLister struct{}

// NewNetlinkLister returns [ErrNotSupported] outside Linux.
func NewNetlinkLister(string) (*NetlinkLister, error) { return nil, ErrNotSupported }

// Close does nothing.
func (*NetlinkLister) Close() error { return nil }

// Links returns [ErrNotSupported].
func (*NetlinkLister) Links(context.Context) ([]Link, error) { return nil, ErrNotSupported }
