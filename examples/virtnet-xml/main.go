package main

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"github.com/virtnet/virtnet/internal/buildinfo"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sigs.k8s.io/yaml"
	"strings"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/binding/sriov"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/prestart"
)

//go:embed embedded/vmi.yaml
var defaultVMI []byte

// defaultCache holds the records phase1 writes for defaultVMI on the
// simulated pod (TestEmbeddedCache keeps them current).
//
//go:embed embedded/cache/*/*.json
var defaultCache embed.FS

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type config struct {
	vmiFile, cacheDir, netns, out, ifaceType string
	plan                                     bool
}

// source describes where the records come from, for -plan.
func (c config) source() string {
	switch {
	case c.netns != "":
		return "phase1 in network namespace " + c.netns
	case c.cacheDir != "":
		return c.cacheDir
	case c.vmiFile != "":
		return "phase1 on a simulated pod (netdriver fake)"
	}
	return "the embedded cache"
}

// run is the program; it returns the exit status: 0, 1 for a failure, 2
// for bad input.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("virtnet-xml", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var c config
	fset.StringVar(&c.vmiFile, "vmi", "", "VirtualMachineInstance or VirtualMachine manifest, YAML or JSON (default: embedded example)")
	fset.StringVar(&c.cacheDir, "cache", "", "directory of phase1 records to read (with -netns, required: to write and keep)")
	fset.StringVar(&c.netns, "netns", "", "run phase1 for real in this network namespace first (name under /var/run/netns, or a path; needs root)")
	fset.StringVar(&c.out, "o", "", "write the output to this file instead of stdout")
	fset.StringVar(&c.ifaceType, "interface-type", "", "bridge or ethernet: how bridge and masquerade NICs attach (default: bridge with CAP_NET_ADMIN, else ethernet)")
	fset.BoolVar(&c.plan, "plan", false, "print a per-interface diagram of the pod network instead of XML")
	showVersion := fset.Bool("version", false, "print the version and exit")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, buildinfo.About("virtnet-xml"))
		return 0
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "virtnet-xml: unexpected arguments %q\n", fset.Args())
		return 2
	}
	if c.netns != "" && c.cacheDir == "" {
		// A temporary cache would be deleted on exit, leaving the
		// namespace prepared with no record of it: the next run (or
		// phase1.Cleanup) could then neither resume nor undo it.
		fmt.Fprintln(stderr, "virtnet-xml: -netns needs -cache DIR: phase1's records of what it did in the namespace "+
			"are kept there, for the next run and for phase1.Cleanup")
		return 2
	}
	it := binding.InterfaceType(c.ifaceType)
	if it != "" && it != binding.InterfaceBridge && it != binding.InterfaceEthernet {
		fmt.Fprintf(stderr, "virtnet-xml: -interface-type %q: want bridge or ethernet\n", c.ifaceType)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	vmi, err := loadVMI(c.vmiFile)
	if err != nil {
		printLoadError(stderr, c.vmiFile, err)
		return 2
	}
	// The rule of prestart.Hook: type='bridge' only when libvirt, running
	// with this process's capabilities, could create its tap.
	netAdmin, err := prestart.HasNetAdmin()
	if err != nil {
		fmt.Fprintf(stderr, "virtnet-xml: %v\n", err)
		return 1
	}
	if it, err = prestart.ChooseInterfaceType(vmi, "-interface-type", it, netAdmin); err != nil {
		fmt.Fprintf(stderr, "virtnet-xml: %v\n", err)
		return 2
	}
	if c.netns != "" && os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "virtnet-xml: -netns needs root: phase1 enters the namespace (setns, CAP_SYS_ADMIN) "+
			"and creates links, addresses, routes and NAT rules there (CAP_NET_ADMIN); run it with sudo, or drop -netns to simulate the pod")
		return 1
	}
	out, err := output(ctx, c, vmi, it, logger)
	if err == nil && c.out == "" {
		_, err = io.WriteString(stdout, out)
	} else if err == nil {
		err = os.WriteFile(c.out, []byte(out), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "virtnet-xml: %v\n", err)
		return 1
	}
	return 0
}

// output is the domain XML of vmi, or with -plan its diagram.
func output(ctx context.Context, c config, vmi *api.VMI, it binding.InterfaceType, logger *slog.Logger) (string, error) {
	store, cleanup, err := prepareCache(ctx, c, vmi, logger)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return "", err
	}
	opts := phase2.Options{Registry: registry.Default()}
	if c.plan {
		items, err := phase2.ReadRecords(ctx, vmi, store, opts)
		if err != nil {
			return "", err
		}
		return renderPlan(vmi, store, items, c.source()), nil
	}
	opts.Render = binding.RenderOptions{InterfaceType: it, Env: prestart.Environ()}
	if c.netns == "" && c.cacheDir == "" {
		// The simulated pod also stands in for the SR-IOV device
		// plugin: its VFs come from made-up PCIDEVICE_* variables,
		// unless the environment already has them.
		for k, v := range sriov.SimulatedEnv(vmi) {
			if _, set := opts.Render.Env[k]; !set {
				opts.Render.Env[k] = v
			}
		}
	}
	dom, err := phase2.Domain(ctx, vmi, store, opts)
	if err != nil {
		return "", err
	}
	xml, err := dom.Marshal()
	return xml + "\n", err
}

func loadVMI(file string) (*api.VMI, error) {
	data := defaultVMI
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, err
		}
	}
	data, err := vmDocument(data)
	if err != nil {
		return nil, err
	}
	vmi, err := api.Load(data)
	if err != nil {
		return nil, err
	}
	// A misspelt binding plugin name, refused here with its path and
	// the names known rather than at phase1 or phase2.
	if err := registry.Default().Check(vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}

// printLoadError prints every validation error on its own line, or the one
// decoding error.
func printLoadError(w io.Writer, file string, err error) {
	file = cmp.Or(file, "embedded VMI")
	fes := api.FieldErrors(err)
	if len(fes) == 0 {
		fmt.Fprintf(w, "virtnet-xml: %s: %v\n", file, err)
		return
	}
	fmt.Fprintf(w, "virtnet-xml: %s: %d validation errors:\n", file, len(fes))
	for _, fe := range fes {
		fmt.Fprintf(w, "  %v\n", fe)
	}
}

// prepareCache returns the store to render from, and a cleanup for what
// it created:
//
//   - -netns: phase1 runs for real, writing to -cache (required);
//   - -cache alone: the records a real phase1 wrote there;
//   - -vmi alone: phase1 runs on the simulated pod into a temporary dir;
//   - nothing: the embedded records.
func prepareCache(ctx context.Context, c config, vmi *api.VMI, logger *slog.Logger) (*cache.Store, func(), error) {
	if c.cacheDir != "" && c.netns == "" {
		dir, err := filepath.Abs(c.cacheDir)
		if err != nil {
			return nil, nil, err
		}
		store, err := cache.New(dir)
		return store, nil, err
	}
	dir, cleanup := c.cacheDir, func() {}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "virtnet-xml-")
		if err != nil {
			return nil, nil, err
		}
		dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, cleanup, err
	}
	store, err := cache.New(dir)
	if err != nil {
		return nil, cleanup, err
	}
	switch {
	case c.netns != "":
		path := c.netns
		if !strings.Contains(path, "/") {
			path = filepath.Join("/var/run/netns", path)
		}
		err = phase1.Run(ctx, vmi, path, store, phase1.Options{Logger: logger, Registry: registry.Default()})
	case c.vmiFile != "":
		err = simulatePhase1(ctx, vmi, store, logger)
	default:
		err = copyEmbedded(dir)
	}
	var pe *phase1.Error
	if err != nil && !errors.As(err, &pe) {
		err = fmt.Errorf("phase1: %w", err) // a *phase1.Error says so itself
	}
	return store, cleanup, err
}

// copyEmbedded writes the embedded records under dir.
func copyEmbedded(dir string) error {
	root, err := fs.Sub(defaultCache, "embedded/cache")
	if err != nil {
		return err
	}
	return fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			if err := os.MkdirAll(dst, cache.DirMode); err != nil {
				return err
			}
			return os.Chmod(dst, cache.DirMode)
		}
		data, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, cache.FileMode)
	})
}

// vmDocument returns the one VirtualMachine or VirtualMachineInstance of a
// multi-document YAML file (deploy/macvtap.yaml holds a ConfigMap, a
// DaemonSet, a NetworkAttachmentDefinition and a VM), or data itself when
// it is a single document.
func vmDocument(data []byte) ([]byte, error) {
	docs := yamlDocuments(data)
	if len(docs) <= 1 {
		return data, nil
	}
	var found [][]byte
	var kinds []string
	for _, d := range docs {
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", len(kinds)+1, err)
		}
		kinds = append(kinds, head.Kind)
		if head.Kind == api.KindVM || head.Kind == api.KindVMI {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d documents (%s): want exactly one %s or %s, found %d", len(docs), strings.Join(kinds, ", "), api.KindVM, api.KindVMI, len(found))
	}
	return found[0], nil
}

// yamlDocuments splits a YAML stream at its "---" separator lines (and
// "..." end markers), leaving out empty documents.
func yamlDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	flush := func() {
		if len(bytes.TrimSpace(cur)) > 0 {
			docs = append(docs, cur)
		}
		cur = nil
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		switch {
		case bytes.Equal(t, []byte("---")), bytes.Equal(t, []byte("...")):
			flush()
			continue
		case bytes.HasPrefix(t, []byte("--- ")):
			// "--- {kind: …}" or "--- !tag": what follows the marker
			// starts the next document.
			flush()
			line = line[4:]
		}
		cur = append(cur, line...)
	}
	flush()
	return docs
}
