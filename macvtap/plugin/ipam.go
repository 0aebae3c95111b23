package plugin

import (
	"context"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	current "github.com/containernetworking/cni/pkg/types/100"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// The IPAM plugin is run with the CNI library's invoke package, as
// pkg/ipam.ExecAdd does, but with the CNI_* variables taken from args rather
// than from this process's environment (so in-process callers work) and with
// the caller's context.

func ipamArgs(verb string, args *skel.CmdArgs) *invoke.Args {
	return &invoke.Args{
		Command:       verb,
		ContainerID:   args.ContainerID,
		NetNS:         args.Netns,
		PluginArgsStr: args.Args,
		IfName:        args.IfName,
		Path:          args.Path,
	}
}

func (p *Plugin) ipamPath(conf *cniconfig.NetConf, args *skel.CmdArgs) (string, error) {
	paths := filepath.SplitList(args.Path)
	if p.Exec != nil {
		return p.Exec.FindInPath(conf.IPAM.Type, paths)
	}
	return invoke.FindInPath(conf.IPAM.Type, paths)
}

func (p *Plugin) ipamAdd(ctx context.Context, conf *cniconfig.NetConf, args *skel.CmdArgs) (*current.Result, error) {
	fail := func(err error) error {
		return &Error{Verb: "ADD", Step: "run IPAM plugin " + conf.IPAM.Type, Err: err}
	}
	path, err := p.ipamPath(conf, args)
	if err != nil {
		return nil, fail(err)
	}
	r, err := invoke.ExecPluginWithResult(ctx, path, args.StdinData, ipamArgs("ADD", args), p.Exec)
	if err != nil {
		return nil, fail(err)
	}
	res, err := current.NewResultFromResult(r)
	if err != nil {
		return nil, fail(err)
	}
	return res, nil
}

func (p *Plugin) ipamExec(ctx context.Context, verb string, conf *cniconfig.NetConf, args *skel.CmdArgs) error {
	fail := func(err error) error {
		return &Error{Verb: verb, Step: "run IPAM plugin " + conf.IPAM.Type, Err: err}
	}
	path, err := p.ipamPath(conf, args)
	if err != nil {
		return fail(err)
	}
	if err := invoke.ExecPluginWithoutResult(ctx, path, args.StdinData, ipamArgs(verb, args), p.Exec); err != nil {
		return fail(err)
	}
	return nil
}
