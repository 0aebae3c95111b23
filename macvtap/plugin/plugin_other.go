//go:build !linux

package plugin

import (
	"context"

	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"
)

func (p *Plugin) setup(context.Context, *skel.CmdArgs) (*current.Result, error) {
	return nil, ErrNotSupported
}

func (p *Plugin) teardown(context.Context, *skel.CmdArgs) error { return ErrNotSupported }

func (p *Plugin) verify(context.Context, *skel.CmdArgs) error { return ErrNotSupported }
