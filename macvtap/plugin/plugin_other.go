//go:build !linux

package plugin

import (
	"context"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
)

// Setup returns [ErrNotSupported] outside Linux.
func (p *Plugin) Setup(context.Context, *skel.CmdArgs) (*current.Result, error) {
	return nil, ErrNotSupported
}

// Teardown returns [ErrNotSupported] outside Linux.
func (p *Plugin) Teardown(context.Context, *skel.CmdArgs) error { return ErrNotSupported }

// Verify returns [ErrNotSupported] outside Linux.
func (p *Plugin) Verify(context.Context, *skel.CmdArgs) error { return ErrNotSupported }
