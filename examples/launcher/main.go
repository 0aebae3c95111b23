package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/virtnet/virtnet/internal/buildinfo"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2/prestart"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type config struct {
	vmiFile, netns, dir, out, resolv, netInfo, ifaceType, hostname string
	once, cleanup, verbose                                         bool
}

// netnsPath turns a namespace name into its path under /var/run/netns.
func netnsPath(s string) string {
	if strings.ContainsRune(s, '/') {
		return s
	}
	return filepath.Join("/var/run/netns", s)
}

// run is the program; it returns the exit status: 0, 1 for a failure, 2
// for bad input.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("launcher", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var c config
	fset.StringVar(&c.vmiFile, "vmi", "", "VirtualMachineInstance manifest, YAML or JSON (required)")
	fset.StringVar(&c.netns, "netns", "", "the pod's network namespace: a name under /var/run/netns or a path (required; needs root)")
	fset.StringVar(&c.dir, "dir", "", "working directory for the cache, disks and images (default: a new temporary directory)")
	fset.StringVar(&c.out, "o", "", "write the domain XML to this file (default: stdout)")
	fset.StringVar(&c.resolv, "resolv", prestart.DefaultResolvConf, "the pod's resolv.conf, for the DHCP servers")
	fset.StringVar(&c.netInfo, "network-info", prestart.DefaultNetworkInfo, "KubeVirt 1.x's downward-API network-info file, for SR-IOV VFs")
	fset.StringVar(&c.hostname, "hostname", "", "hostname for DHCP and cloud-init (default: from the VMI)")
	fset.StringVar(&c.ifaceType, "interface-type", "", "ethernet or bridge: how bridge and masquerade NICs attach (default: bridge with CAP_NET_ADMIN, else ethernet)")
	fset.BoolVar(&c.once, "once", false, "exit after the hook instead of serving DHCP until signalled")
	fset.BoolVar(&c.cleanup, "cleanup", false, "undo phase1 (phase1.Cleanup) before exiting")
	fset.BoolVar(&c.verbose, "v", false, "log every step (to stderr)")
	showVersion := fset.Bool("version", false, "print the version and exit")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, buildinfo.About("launcher"))
		return 0
	}
	switch {
	case fset.NArg() > 0:
		fmt.Fprintf(stderr, "launcher: unexpected arguments %q\n", fset.Args())
		return 2
	case c.vmiFile == "":
		fmt.Fprintln(stderr, "launcher: -vmi is required")
		return 2
	case c.netns == "":
		fmt.Fprintln(stderr, "launcher: -netns is required")
		return 2
	}
	switch it := binding.InterfaceType(c.ifaceType); it {
	case "", binding.InterfaceEthernet, binding.InterfaceBridge:
	default:
		fmt.Fprintf(stderr, "launcher: -interface-type %q: want ethernet or bridge\n", c.ifaceType)
		return 2
	}
	level := slog.LevelWarn
	if c.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := launch(ctx, c, stdout, stderr, log); err != nil {
		fmt.Fprintf(stderr, "launcher: %v\n", err)
		var fe *api.FieldError
		if errors.As(err, &fe) {
			return 2
		}
		return 1
	}
	return 0
}

// launch does the work: progress goes to stderr (as the logs do), the
// domain XML alone to stdout, so that `launcher > domain.xml` is XML.
func launch(ctx context.Context, c config, stdout, stderr io.Writer, log *slog.Logger) (err error) {
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "launcher: "+format+"\n", a...) }
	data, err := os.ReadFile(c.vmiFile)
	if err != nil {
		return err
	}
	vmi, err := api.Load(data)
	if err != nil {
		return err
	}
	say("VMI %s/%s (uid %s): %d interface(s), %d volume(s)", vmi.Metadata.Namespace, vmi.Metadata.Name,
		vmi.Metadata.UID, len(vmi.Spec.Domain.Devices.Interfaces), len(vmi.Spec.Volumes))
	if os.Geteuid() != 0 {
		return errNeedsRoot
	}
	// The interface type, by the hook's rule, before anything changes:
	// type='bridge' only when libvirt could create its tap.
	netAdmin, err := prestart.HasNetAdmin()
	if err != nil {
		return err
	}
	ifaceType, err := prestart.ChooseInterfaceType(vmi, "-interface-type", prestart.InterfaceType(c.ifaceType), netAdmin)
	if err != nil {
		return err
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "virtnet-launcher-"); err != nil {
			return err
		}
	}
	if c.dir, err = filepath.Abs(c.dir); err != nil {
		return err
	}
	dirs := domxml.Options{
		PrivateDir:       filepath.Join(c.dir, "private"),
		EphemeralDir:     filepath.Join(c.dir, "ephemeral"),
		ContainerDiskDir: filepath.Join(c.dir, "container-disks"),
		EmptyDiskDir:     filepath.Join(c.dir, "empty-disks"),
	}
	store, err := cache.New(filepath.Join(c.dir, "cache"))
	if err != nil {
		return err
	}
	ns := netnsPath(c.netns)

	// 1. phase1, as virt-handler runs it.
	if err := phase1.Run(ctx, vmi, ns, store, phase1.Options{Logger: log}); err != nil {
		return err // a *phase1.Error, which names phase1 and its step
	}
	say("phase1 done in %s; cache under %s", ns, store.Root())
	if c.cleanup {
		defer func() {
			cerr := phase1.Cleanup(context.WithoutCancel(ctx), vmi, ns, store, phase1.Options{Logger: log})
			if cerr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
				return
			}
			say("phase1 undone in %s", ns)
		}()
	}

	// 2. the preStartHook: it builds the domain, renders the interfaces
	// and starts their DHCP servers. Its context lives as long as the VM.
	hctx, stopHook := context.WithCancel(ctx)
	defer stopHook()
	hook := &prestart.Hook{
		VMI: vmi, Store: store, Dirs: dirs,
		SecretDir:     filepath.Join(c.dir, "secret"),
		SysprepDir:    filepath.Join(c.dir, "sysprep"),
		ResolvConf:    c.resolv,
		NetworkInfo:   c.netInfo,
		Hostname:      c.hostname,
		NetNS:         ns,
		InterfaceType: ifaceType,
		Env:           prestart.Environ(),
		Logger:        log,
	}
	running, err := hook.Run(hctx)
	if err != nil {
		return err
	}
	dom := running.Domain()
	for _, p := range running.Created() {
		say("created %s", p)
	}
	for _, s := range running.Servers() {
		say("DHCP server for interface %s on %s: %s to %s, hostname %q", s.Interface, s.Bridge, s.Address, orAny(s.MAC), s.Hostname)
	}

	// 3. the domain XML.
	xml, err := dom.Marshal()
	if err != nil {
		return errors.Join(fmt.Errorf("domain: %w", err), running.Stop())
	}
	if c.out == "" {
		fmt.Fprintln(stdout, xml)
	} else {
		if err := os.WriteFile(c.out, []byte(xml+"\n"), 0o644); err != nil {
			return errors.Join(err, running.Stop())
		}
		say("domain XML written to %s", c.out)
	}

	// 4. serve DHCP until told to stop.
	if c.once || len(running.Servers()) == 0 {
		return running.Stop()
	}
	say("serving DHCP until SIGINT or SIGTERM")
	err = running.Wait()
	say("stopped")
	return err
}

// errNeedsRoot says why the launcher needs root.
var errNeedsRoot = errors.New("needs root: phase1 enters the pod's network namespace (setns, CAP_SYS_ADMIN) " +
	"and creates links, addresses, routes and NAT rules there (CAP_NET_ADMIN); run it with sudo")

func orAny(mac string) string {
	if mac == "" {
		return "any client"
	}
	return mac
}
