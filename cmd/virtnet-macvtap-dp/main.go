// Command virtnet-macvtap-dp is the macvtap device plugin daemon: it
// advertises macvtap.network.kubevirt.io/<name> resources to the kubelet
// (device-plugin API v1beta1) and creates a device's macvtap when the
// kubelet allocates it. See package
// github.com/virtnet/virtnet/macvtap/dpserver for what it does, and
// docs/macvtap-device-plugin.md for deploying it.
//
// Its configuration is the DP_MACVTAP_CONF environment variable: a JSON
// array of {"name", "lowerDevice", "mode", "capacity"}; "[]" makes one
// resource per host NIC. It runs in a privileged hostNetwork pod with the
// kubelet's device-plugin directory mounted. It exits 0 on SIGTERM or
// SIGINT, 2 on a bad configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/virtnet/virtnet/internal/buildinfo"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
	"github.com/virtnet/virtnet/macvtap/dpserver"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fail := func(code int, err error) int {
		fmt.Fprintln(os.Stderr, "virtnet-macvtap-dp:", err)
		return code
	}
	fs := flag.NewFlagSet("virtnet-macvtap-dp", flag.ContinueOnError)
	dir := fs.String("device-plugin-dir", "/var/lib/kubelet/device-plugins", "the kubelet's device-plugin directory")
	podRes := fs.String("pod-resources-socket", dpserver.DefaultPodResourcesSocket, `the kubelet's pod-resources socket, to give back devices of deleted pods ("-": off)`)
	hostNS := fs.String("host-netns", "", `network namespace of the lower devices ("": this process's, as in a hostNetwork pod)`)
	poll := fs.Duration("poll", dpserver.DefaultPoll, "how often to look at the lower devices, the kubelet's socket and the pod resources")
	giveBack := fs.Duration("give-back-after", dpserver.DefaultGiveBackAfter, "how long an allocated device no pod holds keeps its host macvtap")
	verbose := fs.Bool("v", false, "log at debug level")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Println(buildinfo.About("virtnet-macvtap-dp"))
		return 0
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	conf, err := deviceplugin.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		return fail(2, err)
	}
	lister, err := deviceplugin.NewNetlinkLister(*hostNS)
	if err != nil {
		return fail(1, err)
	}
	defer func() { _ = lister.Close() }()
	resources, err := deviceplugin.Resources(ctx, conf, lister)
	if err != nil {
		return fail(1, err)
	}
	if len(resources) == 0 {
		fmt.Fprintln(os.Stderr, "virtnet-macvtap-dp: "+deviceplugin.ConfigEnv+" is [] and the host has no NIC that can carry macvtaps")
		return 1
	}
	for _, r := range resources {
		log.Info("virtnet-macvtap-dp: resource", "resource", r.ResourceName(), "lowerDevice", r.LowerDevice, "mode", r.Mode, "capacity", r.Capacity)
	}
	kernel, err := dpserver.NewNetlinkKernel(*hostNS)
	if err != nil {
		return fail(1, err)
	}
	defer func() { _ = kernel.Close() }()
	d, err := dpserver.New(dpserver.Config{
		Resources: resources, Kernel: kernel, Dir: *dir, PodResourcesSocket: *podRes,
		Poll: *poll, GiveBackAfter: *giveBack, Log: log,
	})
	if err != nil {
		return fail(2, err)
	}
	start := time.Now()
	if err := d.Run(ctx); err != nil {
		return fail(1, err)
	}
	log.Info("virtnet-macvtap-dp: stopped", "ran", time.Since(start).Round(time.Second))
	return 0
}
