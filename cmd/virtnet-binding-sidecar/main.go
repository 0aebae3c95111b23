//go:build linux

// Command virtnet-binding-sidecar is the hook sidecar of virtnet's
// KubeVirt 1.x network binding plugins (virtnet-bridge,
// virtnet-masquerade, virtnet-slirp): virt-launcher calls it over gRPC on a
// unix socket to add the VM's interfaces to the domain, and it serves the
// DHCP servers of those interfaces in the pod for as long as the VM runs.
//
// KubeVirt starts it with no arguments, as uid 107, in the virt-launcher
// pod's network namespace, with its own /var/run/kubevirt-hooks (which
// virt-launcher sees as /var/run/kubevirt-hooks/<container name>/). It
// listens there on <plugin>.sock and answers:
//
//   - Info: name, versions [v1alpha3], hook points OnDefineDomain and
//     Shutdown (priority 0);
//   - OnDefineDomain: for every VMI interface whose binding.name it
//     serves, the interface rendered by virtnet's phase2 from the hand-off
//     record the CNI plugin (cmd/virtnet-binding-cni) left on the tap
//     (slirp needs none), replacing an interface of the same alias;
//     hotplug placeholders and other interfaces stay as they are. It then
//     makes the DHCP servers match the VMI: one per present interface
//     (started once), none for an interface set state: absent or gone
//     from the VMI (an absent interface is not rendered);
//   - PreCloudInitIso: the cloud-init data unchanged;
//   - Shutdown: stops the DHCP servers and exits, within 5 s (calls in
//     progress may finish) whatever its clients do: then every
//     connection is closed.
//
// Which plugin names it serves: NETWORK_BINDING_PLUGIN_NAME (set by
// KubeVirt ≥ 1.9 to the name in the KubeVirt CR), else
// VIRTNET_BINDING_PLUGIN_NAME (set in the image), else all of
// virtnet-bridge, virtnet-masquerade and virtnet-slirp. A name maps to a
// method by its suffix (-bridge, -masquerade, -slirp).
//
// Flags (defaults are the in-pod values):
//
//	-socket-dir   /var/run/kubevirt-hooks
//	-netns        network namespace to read records and serve DHCP in ("" = own)
//	-resolv-conf  /etc/resolv.conf (DNS servers and search domains for DHCP)
//	-log-level    info
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"github.com/virtnet/virtnet/internal/buildinfo"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
)

func main() {
	cfg := sidecar.Config{}
	flag.StringVar(&cfg.SocketDir, "socket-dir", sidecar.DefaultSocketDir, "directory virt-launcher collects hook sockets from")
	flag.StringVar(&cfg.NetNS, "netns", "", "network namespace path (default: the sidecar's own)")
	flag.StringVar(&cfg.ResolvConf, "resolv-conf", "/etc/resolv.conf", "resolv.conf whose DNS servers and search domains DHCP serves")
	level := flag.String("log-level", "info", "debug, info, warn or error")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(buildinfo.About("virtnet-binding-sidecar"))
		return
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "virtnet-binding-sidecar: -log-level:", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	cfg.Plugin = cmp.Or(os.Getenv(sidecar.EnvPluginName), os.Getenv(sidecar.EnvVirtnetPluginName))
	cfg.ContainerName = os.Getenv(sidecar.EnvContainerName)
	cfg.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := sidecar.Run(ctx, cfg); err != nil {
		log.Error("sidecar failed", "error", err)
		os.Exit(1)
	}
}
