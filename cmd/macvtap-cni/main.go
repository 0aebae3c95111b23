// Command macvtap-cni is the macvtap CNI plugin: it moves the macvtap that
// the device plugin made for a pod's deviceID into the pod's network
// namespace and configures it. See package
// github.com/virtnet/virtnet/macvtap/plugin for what each verb does.
//
// Install it as "macvtap" in the runtime's CNI bin directory. Logs go to
// stderr, the result to stdout, as the CNI spec asks.
package main

import (
	"log/slog"
	"os"

	"github.com/containernetworking/cni/pkg/skel"

	"github.com/virtnet/virtnet/internal/buildinfo"
	"github.com/virtnet/virtnet/macvtap/plugin"
)

func main() {
	buildinfo.HandleVersionFlag("macvtap-cni")
	p := &plugin.Plugin{
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stdout: os.Stdout,
	}
	wrap := func(f func(*skel.CmdArgs) error) func(*skel.CmdArgs) error {
		return func(a *skel.CmdArgs) error { return plugin.CNIError(f(a)) }
	}
	skel.PluginMainFuncs(skel.CNIFuncs{
		Add:    wrap(p.Add),
		Del:    wrap(p.Del),
		Check:  wrap(p.Check),
		Status: wrap(p.Status),
		GC:     wrap(p.GC),
	}, plugin.VersionInfo(), buildinfo.About("macvtap-cni"))
}
