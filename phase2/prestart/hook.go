package prestart

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
)

// DefaultNetworkInfo is where KubeVirt 1.x mounts the pod's
// kubevirt.io/network-info annotation (downward API) in virt-launcher.
const DefaultNetworkInfo = "/etc/podinfo/network-info"

// DefaultResolvConf is the pod's resolver configuration the DHCP servers
// read their DNS servers and search domains from.
const DefaultResolvConf = "/etc/resolv.conf"

// DefaultQemuImg is the program the storage step creates containerDisk
// overlays with (Debian package qemu-utils).
const DefaultQemuImg = "qemu-img"

// Hook is one preStartHook run: the inputs of every step. VMI and Store
// are required; the rest have defaults.
//
// Hook is the launcher's one path from phase1's cache to a domain that can
// be defined: it builds the domain from Dirs (or completes the one given),
// renders the interfaces and starts the DHCP servers their bindings ask
// for, in one call. phase2.Domain renders the same XML without any of the
// rest (a dry run: no DHCP server, no image).
type Hook struct {
	// VMI is the validated VMI.
	VMI *api.VMI
	// Store is phase1's cache (the network step reads the records).
	Store *cache.Store
	// Records, when not nil, is where the network step and a live update
	// read the records instead of Store (which may then be nil): the
	// binding plugins' hand-off, say. Nil means phase2.CacheRecords{Store}.
	Records phase2.Records
	// Dirs are the directories of the domain: the hook builds the domain
	// with them (domxml.Build) when Domain is nil, and they locate the
	// disk sources (domxml.DiskPath) and the images (domxml.ISOPath).
	Dirs domxml.Options
	// Domain, when not nil, is a domain built by the caller with the same
	// Dirs (domxml.Build, or KubeVirt's converter): the steps complete it
	// in place (interfaces, emptyDisk driver type) and restore it on
	// failure. Nil (the usual case) makes the hook build it; either way
	// [Running.Domain] returns it.
	Domain *libvirtxml.Domain
	// SecretDir holds the mounted cloud-init secrets, one directory per
	// volume; SysprepDir the mounted sysprep config maps or secrets (see
	// cloudinit.Builder).
	SecretDir  string
	SysprepDir string
	// NetworkInfo is KubeVirt 1.x's downward-API file with each
	// network's device-info, read for SR-IOV interfaces (their VF's PCI
	// address); "" means [DefaultNetworkInfo]. A missing file is not an
	// error: the other sources of the address remain (package
	// binding/sriov).
	NetworkInfo string
	// ResolvConf is the pod's resolv.conf; "" means [DefaultResolvConf].
	// A missing file gives the DHCP defaults (a warning is logged). Its
	// search domains also go to slirp interfaces.
	ResolvConf string
	// Hostname, when set, replaces the VMI's hostname in the DHCP reply
	// (option 12) and in the NoCloud/ConfigDrive metadata.
	Hostname string
	// NetNS is the path of the pod's network namespace the DHCP servers
	// serve in (e.g. /proc/<pid>/ns/net or /run/netns/<name>); "" means
	// this process's own, for a launcher running in the pod.
	NetNS string
	// InterfaceType is the type of the bridge and masquerade interfaces;
	// "" is chosen by [ChooseInterfaceType] from this process's
	// capabilities ([HasNetAdmin]): type='bridge' only when libvirt can
	// create its tap.
	InterfaceType InterfaceType
	// Env is the launcher's environment, which SR-IOV interfaces find
	// their VF's PCI address in (PCIDEVICE_*, KUBEVIRT_RESOURCE_NAME_*);
	// nil means none. [Environ] is this process's.
	Env map[string]string
	// Registry maps binding methods to implementations; nil means
	// registry.Default(). An outside binding is added here.
	Registry binding.Registry
	// QemuImg is the qemu-img program; "" means [DefaultQemuImg].
	QemuImg string
	// DirectIO reports whether a disk source supports O_DIRECT (the
	// disk-modes step); nil means [DirectIOSupported].
	DirectIO func(path string) (bool, error)
	// Logger receives one line per step and per action; nil discards.
	Logger *slog.Logger
	// Steps replaces [Steps] when not nil.
	Steps []Step
}

// InterfaceType is binding.InterfaceType, so that a launcher sets
// [Hook.InterfaceType] from a string without importing package binding.
type InterfaceType = binding.InterfaceType

// Step is one stage of the hook.
type Step interface {
	// Name is the step's name in logs and in [StepError].
	Name() string
	// Run does the step's work on the shared state. It records every file
	// or directory it creates with [State.Created], so that a failure of
	// this or a later step can remove them.
	Run(ctx context.Context, st *State) error
}

// Steps is the hook's step list, in the order the steps run.
func Steps() []Step {
	return []Step{
		Storage{},
		Network{},
		CloudInit{},
		DiskModes{},
	}
}

// State is what the steps of one run share.
type State struct {
	// Hook holds the inputs (defaults applied); steps must not change it
	// except Hook.Domain.
	Hook *Hook
	// Log is the step's logger (with a "step" attribute).
	Log *slog.Logger
	// Render are the bindings' options the network step renders with
	// (the hook's InterfaceType once chosen, Env, the slirp search
	// domains).
	Render binding.RenderOptions

	created []string
	// dhcp are the run's DHCP servers: they serve under the run's
	// context, and a live update ([Running.DHCP]) starts and stops them
	// while the VM runs.
	dhcp *phase2.DHCPServers
}

// Created records a file or directory this run made; on failure the run
// removes them, last first. Record a directory before what it holds.
func (st *State) Created(path string) { st.created = append(st.created, path) }

// ServerInfo describes one DHCP server a run started.
type ServerInfo = phase2.ServerInfo

// Running is a successful run: its DHCP servers keep serving until the
// context given to [Hook.Run] ends or [Running.Stop] is called.
type Running struct {
	domain *libvirtxml.Domain
	st     *State
	cancel context.CancelFunc
}

// Domain is the completed domain, ready to define: the one the hook built,
// or [Hook.Domain].
func (r *Running) Domain() *libvirtxml.Domain { return r.domain }

// Servers describes the DHCP servers, in interface order.
func (r *Running) Servers() []ServerInfo { return r.st.dhcp.Servers() }

// Created lists the files and directories the run created, in order.
func (r *Running) Created() []string { return slices.Clone(r.st.created) }

// Wait blocks until every DHCP server has stopped (the run's context
// ended, or Stop) and returns their failures joined; a server that stopped
// because its context ended is not a failure.
func (r *Running) Wait() error { return r.st.dhcp.Wait() }

// Stop stops the DHCP servers and waits for them (see Wait).
func (r *Running) Stop() error {
	r.cancel()
	return r.st.dhcp.StopAll()
}

func (h *Hook) check() error {
	switch {
	case h.VMI == nil:
		return hookError("VMI", errRequired)
	case h.Store == nil && h.Records == nil:
		return hookError("Store", fmt.Errorf("%w (or Records)", errRequired))
	}
	return nil
}

// Run builds the domain (unless [Hook.Domain] is set) and runs the steps
// in order (see the package documentation). On success the returned
// [*Running] holds the domain to define and the DHCP servers, which serve
// until ctx ends or Running.Stop: ctx must live as long as the VM (the
// guest loses its leases' renewals when it is canceled). On failure it
// returns a [*StepError] (or, before any step, an error matching [ErrInvalidHook], a
// domxml error for a domain it cannot build, or an [ErrNeedsNetAdmin] error
// when InterfaceType is bridge and this process lacks CAP_NET_ADMIN) after
// undoing the run: created files removed, servers stopped, a given domain
// restored.
func (h *Hook) Run(ctx context.Context) (*Running, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	hk := *h
	hk.ResolvConf = cmp.Or(hk.ResolvConf, DefaultResolvConf)
	hk.QemuImg = cmp.Or(hk.QemuImg, DefaultQemuImg)
	hk.NetworkInfo = cmp.Or(hk.NetworkInfo, DefaultNetworkInfo)
	netAdmin, err := HasNetAdmin()
	if err != nil {
		return nil, hookError("InterfaceType", fmt.Errorf("cannot read this process's capabilities: %w", err))
	}
	render := binding.RenderOptions{Env: hk.Env}
	if render.InterfaceType, err = ChooseInterfaceType(hk.VMI, "InterfaceType", hk.InterfaceType, netAdmin); err != nil {
		return nil, err
	}
	// SR-IOV finds its VF's PCI address in the network info, slirp
	// offers the pod's search domains (dnssearch=).
	for _, f := range []struct {
		binding, field, path string
		into                 *[]byte
	}{
		{api.BindingSRIOV, "NetworkInfo", hk.NetworkInfo, &render.NetworkInfo},
		{api.BindingSlirp, "ResolvConf", hk.ResolvConf, &render.ResolvConf},
	} {
		if !hasBinding(hk.VMI, f.binding) {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, hookError(f.field, err)
		}
		*f.into = b
	}
	if hk.Domain == nil {
		if hk.Domain, err = domxml.Build(hk.VMI, hk.Dirs); err != nil {
			return nil, fmt.Errorf("prestart: domain: %w", err)
		}
	}
	if hk.Logger == nil {
		hk.Logger = slog.New(slog.DiscardHandler)
	}
	steps := hk.Steps
	if steps == nil {
		steps = Steps()
	}
	saved, err := copyDomain(hk.Domain)
	if err != nil {
		return nil, hookError("Domain", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	servers, err := phase2.NewDHCPServers(sctx, phase2.DHCPOptions{NetNS: hk.NetNS, ResolvConf: hk.ResolvConf,
		Hostname: hk.Hostname, Logger: hk.Logger.With("step", Network{}.Name())})
	if err != nil {
		cancel()
		return nil, err
	}
	st := &State{Hook: &hk, Render: render, dhcp: servers}
	for _, s := range steps {
		st.Log = hk.Logger.With("step", s.Name())
		start := time.Now()
		err := ctx.Err()
		if err == nil {
			err = s.Run(ctx, st)
		}
		if err != nil {
			st.Log.Error("step failed; undoing the run", "error", err)
			cancel()
			_ = servers.StopAll() // the step's error is the one to return
			undo(st)
			*hk.Domain = *saved
			return nil, &StepError{Step: s.Name(), Err: err}
		}
		st.Log.Info("step done", "took", time.Since(start).Round(time.Millisecond))
	}
	return &Running{domain: hk.Domain, st: st, cancel: cancel}, nil
}

// hasBinding reports whether an interface of the VMI has the binding
// (through its core key or, for KubeVirt 1.x's names, a plugin).
func hasBinding(vmi *api.VMI, b string) bool {
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		if vmi.Spec.Domain.Devices.Interfaces[i].Binding() == b {
			return true
		}
	}
	return false
}

// undo removes what the run created, last first. Failures are logged: the
// step's error is what the caller needs, and a re-run starts over anyway.
func undo(st *State) {
	for _, p := range slices.Backward(st.created) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			st.Log.Warn("cannot remove what the failed run created", "path", p, "error", err)
			continue
		}
		st.Log.Info("removed", "path", p)
	}
}

// copyDomain deep-copies a domain through its XML.
func copyDomain(d *libvirtxml.Domain) (*libvirtxml.Domain, error) {
	s, err := d.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	var c libvirtxml.Domain
	if err := c.Unmarshal(s); err != nil {
		return nil, fmt.Errorf("unmarshal: %w", err)
	}
	return &c, nil
}

// Environ is this process's environment as [Hook.Env] takes it: a
// virt-launcher finds the SR-IOV device plugin's variables there.
func Environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
