package plugin

import (
	"cmp"
	"context"
	"io"
	"log/slog"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

// Plugin is the macvtap CNI plugin. The zero value works in the caller's
// own namespace as the host and discards logs and results.
type Plugin struct {
	// Log receives progress and warnings; nil discards them.
	Log *slog.Logger
	// Stdout receives the result printed by [Plugin.Add]; nil discards it.
	Stdout io.Writer
	// HostNetNS is the path of the namespace holding the device plugin's
	// macvtaps (and the lower devices); "" means the caller's own.
	HostNetNS string
	// DevDir is where the tap<ifindex> character devices are; "" means /dev.
	DevDir string
	// Exec finds and runs IPAM plugins; nil means search CNI_PATH and exec
	// the binary.
	Exec Exec
}

// VersionInfo lists the CNI spec versions the plugin speaks.
func VersionInfo() version.PluginInfo {
	return version.PluginSupports(cniconfig.SupportedVersions()...)
}

// Add is the CNI ADD verb: [Plugin.Setup], then the result printed to
// p.Stdout in the configuration's cniVersion.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	ctx := context.Background()
	res, err := p.Setup(ctx, args)
	if err != nil {
		return err
	}
	conf, err := cniconfig.Parse(args.StdinData)
	if err != nil {
		return err
	}
	out, err := res.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return &Error{Verb: "ADD", Step: "convert result to version " + conf.CNIVersion, Err: err}
	}
	return out.PrintTo(cmp.Or(p.Stdout, io.Discard))
}

// Del is the CNI DEL verb; see [Plugin.Teardown].
func (p *Plugin) Del(args *skel.CmdArgs) error { return p.Teardown(context.Background(), args) }

// Check is the CNI CHECK verb; see [Plugin.Verify].
func (p *Plugin) Check(args *skel.CmdArgs) error { return p.Verify(context.Background(), args) }

// Status is the CNI STATUS verb (CNI 1.1): the plugin itself keeps no
// state and is ready once the network configuration parses; when "ipam" is
// configured, the IPAM plugin's STATUS is the answer (host-local, for one,
// has nothing to say; an IPAM that cannot allocate reports it here).
func (p *Plugin) Status(args *skel.CmdArgs) error {
	conf, err := cniconfig.ParseNetwork(args.StdinData)
	if err != nil {
		return err
	}
	if conf.IPAM.Type == "" {
		return nil
	}
	return p.ipamExec(context.Background(), "STATUS", conf, args)
}

// GC is the CNI GC verb (CNI 1.1): the plugin keeps nothing of its own
// (the macvtap of an attachment dies with the pod's namespace, the host
// ones belong to the device plugin), so GC is the IPAM plugin's: it is
// passed the configuration unchanged, cni.dev/valid-attachments included,
// and releases the addresses of every other attachment (host-local does).
func (p *Plugin) GC(args *skel.CmdArgs) error {
	conf, err := cniconfig.ParseNetwork(args.StdinData)
	if err != nil {
		return err
	}
	if conf.IPAM.Type == "" {
		return nil
	}
	p.log().Info("macvtap GC: passed to IPAM", "ipam", conf.IPAM.Type, "validAttachments", len(conf.ValidAttachments))
	return p.ipamExec(context.Background(), "GC", conf, args)
}

func (p *Plugin) log() *slog.Logger { return cmp.Or(p.Log, slog.New(slog.DiscardHandler)) }

func (p *Plugin) devDir() string { return cmp.Or(p.DevDir, "/dev") }
