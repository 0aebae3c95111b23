//go:build linux

// Package sidecar is the hook sidecar of virtnet's KubeVirt 1.x network
// binding plugins (cmd/virtnet-binding-sidecar is its main): [Run] serves
// KubeVirt's hook protocol on a unix socket and the DHCP servers of the
// VM's interfaces. See the command's documentation.
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/hookapi/info"
	"github.com/virtnet/virtnet/internal/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/internal/kvplugin"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/dhcp"
)

// Protocol constants of KubeVirt's hook sidecars.
const (
	// DefaultSocketDir is where a sidecar listens (KubeVirt's
	// HookSocketsSharedDirectory, mounted per container).
	DefaultSocketDir = "/var/run/kubevirt-hooks"
	// EnvPluginName is set by KubeVirt ≥ 1.9 to the plugin's name.
	EnvPluginName = "NETWORK_BINDING_PLUGIN_NAME"
	// EnvVirtnetPluginName is the image's fallback for older KubeVirt.
	EnvVirtnetPluginName = "VIRTNET_BINDING_PLUGIN_NAME"
	// EnvContainerName is set by KubeVirt to hook-sidecar-<i>.
	EnvContainerName = "CONTAINER_NAME"
	// Version is the only Callbacks version served (the one with
	// Shutdown).
	Version = "v1alpha3"
	// Hook point names.
	HookOnDefineDomain = "OnDefineDomain"
	HookShutdown       = "Shutdown"
)

// Config configures [Run].
type Config struct {
	// SocketDir holds the socket; "" means DefaultSocketDir.
	SocketDir string
	// Plugin is the one plugin name served; "" serves virtnet's three
	// default names.
	Plugin string
	// ContainerName names the socket when Plugin is "".
	ContainerName string
	// NetNS is the pod's network namespace; "" is the sidecar's own.
	NetNS string
	// ResolvConf is read once per DHCP server start.
	ResolvConf string
	// Logger is never nil after fill.
	Logger *slog.Logger
	// ShutdownGrace bounds how long Run waits, once it stops, for calls
	// in progress (a client may hold a half-sent call for ever); then it
	// closes them. 0 means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// WatchInterval is how often each DHCP server's bridge is checked
	// (see [Run]); 0 means DefaultWatchInterval.
	WatchInterval time.Duration
}

// Limits of the hook server.
const (
	// DefaultShutdownGrace is [Config.ShutdownGrace]'s default.
	DefaultShutdownGrace = 5 * time.Second
	// DefaultWatchInterval is [Config.WatchInterval]'s default.
	DefaultWatchInterval = 2 * time.Second
	// MaxMessageSize bounds a call's message (a domain and a VMI are
	// tens of KiB; parsing costs tens of times the message).
	MaxMessageSize = 1 << 20
	// MaxConcurrentCalls bounds the calls handled at once; more are
	// refused with ResourceExhausted (virt-launcher makes one at a time).
	MaxConcurrentCalls = 4
	// MaxConnections bounds the open connections (virt-launcher opens one
	// per call).
	MaxConnections = 32
)

// SocketName is the socket's file name: <plugin>.sock, or, serving all
// three names, virtnet-<container name>.sock (virt-launcher counts
// sockets by file name across the sidecars of a pod).
func (c *Config) SocketName() string {
	switch {
	case c.Plugin != "":
		return c.Plugin + ".sock"
	case c.ContainerName != "":
		return "virtnet-" + c.ContainerName + ".sock"
	}
	return "virtnet.sock"
}

func (c *Config) served() (kvplugin.Served, error) {
	if c.Plugin == "" {
		all := kvplugin.Plugins()
		return func(n string) (string, bool) { m, ok := all[n]; return m, ok }, nil
	}
	method, err := kvplugin.MethodFor(c.Plugin)
	if err != nil {
		return nil, err
	}
	name := c.Plugin
	return func(n string) (string, bool) { return method, n == name }, nil
}

// Run listens on the socket and serves until ctx ends or virt-launcher
// calls Shutdown; it then stops the DHCP servers and removes the socket.
func Run(ctx context.Context, cfg Config) error {
	if cfg.SocketDir == "" {
		cfg.SocketDir = DefaultSocketDir
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = "/etc/resolv.conf"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	served, err := cfg.served()
	if err != nil {
		return err
	}
	path := filepath.Join(cfg.SocketDir, cfg.SocketName())
	if err := removeStaleSocket(path); err != nil {
		return err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	defer os.Remove(path)
	// virt-launcher runs as uid 107 (non-root VMIs) or root; the
	// directory is the pod's own.
	if err := os.Chmod(path, 0o660); err != nil {
		lis.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &sidecar{cfg: cfg, served: served, registry: registry.Default(), log: cfg.Logger, shutdown: cancel,
		dhcp: map[string]*runningDHCP{}, calls: make(chan struct{}, MaxConcurrentCalls)}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxConcurrentStreams(MaxConcurrentCalls),
		grpc.UnaryInterceptor(s.limit))
	info.RegisterInfoServer(srv, s)
	v1alpha3.RegisterCallbacksServer(srv, s)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(netutil.LimitListener(lis, MaxConnections)) }()
	cfg.Logger.Info("serving hooks", "socket", path, "plugin", cfg.Plugin, "version", Version)
	select {
	case <-ctx.Done():
	case err := <-errc:
		s.stopDHCP()
		return err
	}
	s.stop(srv)
	s.stopDHCP()
	cfg.Logger.Info("stopped")
	return nil
}

// stop lets the calls in progress finish for at most ShutdownGrace, then
// closes them.
func (s *sidecar) stop(srv *grpc.Server) {
	grace := s.cfg.ShutdownGrace
	if grace <= 0 {
		grace = DefaultShutdownGrace
	}
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("calls still open after the shutdown grace; closing them", "grace", grace.String())
		srv.Stop()
		<-done
	}
}

// limit refuses a call beyond MaxConcurrentCalls at once.
func (s *sidecar) limit(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	select {
	case s.calls <- struct{}{}:
	default:
		return nil, status.Errorf(codes.ResourceExhausted, "%d calls in progress already", MaxConcurrentCalls)
	}
	defer func() { <-s.calls }()
	return handler(ctx, req)
}

// removeStaleSocket removes a socket left by an earlier run; any other
// file there is an error (virt-launcher would dial it).
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%s exists and is not a socket: refusing to replace it", path)
	}
	return os.Remove(path)
}

type sidecar struct {
	info.UnimplementedInfoServer
	v1alpha3.UnimplementedCallbacksServer
	cfg      Config
	served   kvplugin.Served
	registry binding.Registry
	log      *slog.Logger
	shutdown context.CancelFunc

	// calls holds a token per call in progress.
	calls chan struct{}

	mu   sync.Mutex
	dhcp map[string]*runningDHCP
	wg   sync.WaitGroup
}

type runningDHCP struct {
	cancel context.CancelFunc
}

// Info answers virt-launcher's collection of the hook sockets.
func (s *sidecar) Info(context.Context, *info.InfoParams) (*info.InfoResult, error) {
	name := s.cfg.Plugin
	if name == "" {
		name = "virtnet-binding-sidecar"
	}
	return &info.InfoResult{
		Name:     name,
		Versions: []string{Version},
		HookPoints: []*info.HookPoint{
			{Name: HookOnDefineDomain, Priority: 0},
			{Name: HookShutdown, Priority: 0},
		},
	}, nil
}

// PreCloudInitIso returns the cloud-init data unchanged.
func (s *sidecar) PreCloudInitIso(_ context.Context, p *v1alpha3.PreCloudInitIsoParams) (*v1alpha3.PreCloudInitIsoResult, error) {
	return &v1alpha3.PreCloudInitIsoResult{CloudInitData: p.GetCloudInitData(), CloudInitNoCloudSource: p.GetCloudInitNoCloudSource()}, nil
}

// Shutdown stops the sidecar after answering.
func (s *sidecar) Shutdown(context.Context, *v1alpha3.ShutdownParams) (*v1alpha3.ShutdownResult, error) {
	s.log.Info("shutdown requested")
	go s.shutdown()
	return &v1alpha3.ShutdownResult{}, nil
}

// OnDefineDomain adds the served interfaces to the domain.
func (s *sidecar) OnDefineDomain(ctx context.Context, p *v1alpha3.OnDefineDomainParams) (*v1alpha3.OnDefineDomainResult, error) {
	out, items, vmi, err := s.define(p.GetDomainXML(), p.GetVmi())
	if err != nil {
		s.log.Error("OnDefineDomain", "error", err)
		return nil, err
	}
	if err := s.startDHCP(ctx, vmi, items); err != nil {
		s.log.Error("DHCP", "error", err)
		return nil, err
	}
	return &v1alpha3.OnDefineDomainResult{DomainXML: out}, nil
}

// define renders the served interfaces into the domain.
func (s *sidecar) define(domainXML, vmiJSON []byte) ([]byte, []phase2.Item, *api.VMI, error) {
	res, err := kvplugin.Resolve(vmiJSON, s.served)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("vmi: %w", err)
	}
	if len(res.VMI.Unknown) > 0 {
		s.log.Warn("the VMI has fields newer than this virtnet knows; they are ignored", "fields", res.VMI.Unknown)
	}
	if len(res.Pairs) == 0 {
		return domainXML, nil, res.VMI, nil
	}
	items := make([]phase2.Item, 0, len(res.Pairs))
	for _, pair := range res.Pairs {
		b, err := s.registry.Lookup(pair.Binding())
		if err != nil {
			return nil, nil, nil, err
		}
		it := phase2.Item{Pair: pair, Binding: b}
		if m := pair.Binding(); m == api.BindingBridge || m == api.BindingMasquerade {
			rec, err := s.record(res.VMI, pair)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("interface %q (plugin %s): %w (did virtnet-binding-cni run for it? see the networkAttachmentDefinition of the plugin)",
					pair.Interface.Name, res.Plugins[pair.Interface.Name], err)
			}
			it.Record = rec
		}
		items = append(items, it)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(string(domainXML)); err != nil {
		return nil, nil, nil, fmt.Errorf("domain XML: %w", err)
	}
	// The pod's resolv.conf gives slirp its search domains, as KubeVirt's
	// does.
	resolv, err := os.ReadFile(s.cfg.ResolvConf)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("resolv.conf: %w", err)
	}
	if err := render(&dom, res.VMI, items, resolv); err != nil {
		return nil, nil, nil, err
	}
	out, err := dom.Marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	return []byte(out), items, res.VMI, nil
}

// record reads the interface's hand-off record from its tap and gives it
// the VM's MAC.
func (s *sidecar) record(vmi *api.VMI, pair api.Pair) (*cache.Interface, error) {
	m := pair.Binding()
	src, err := kvplugin.ReadRecord(s.cfg.NetNS, m, pair.PodInterface, pair.Primary())
	if err != nil {
		return nil, err
	}
	rec := src.Record
	rec.Interface = pair.Interface.Name
	if m == api.BindingMasquerade {
		// The CNI plugin does not know the VMI: the stable MAC comes
		// from the VMI's UID here, so that it survives a migration to
		// another pod (the kernel does not use it).
		rec.MAC, _ = cache.MACFrom(names.VMMAC(vmi.Metadata.UID, pair.Interface.Name))
	}
	if m == api.BindingBridge {
		// The CNI plugin took the pod link's MAC; a VM that had another
		// one on its previous pod (status.interfaces, after a migration)
		// keeps it, as in KubeVirt v1.9.0.
		hw, err := vmi.StatusMAC(pair.Interface.Name)
		if err != nil {
			return nil, err
		}
		if hw != nil {
			rec.MAC, _ = cache.MACFrom(hw)
		}
	}
	if pair.Interface.MacAddress != "" {
		if rec.MAC, err = cache.ParseMAC(pair.Interface.MacAddress); err != nil {
			return nil, &api.FieldError{Path: "macAddress", Value: pair.Interface.MacAddress, Reason: err.Error()}
		}
	}
	return rec, nil
}

// render adds the items' interfaces to dom; an interface already there
// with the same alias is replaced in place, everything else is kept.
func render(dom *libvirtxml.Domain, vmi *api.VMI, items []phase2.Item, resolv []byte) error {
	var existing []libvirtxml.DomainInterface
	if dom.Devices != nil {
		existing = dom.Devices.Interfaces
		dom.Devices.Interfaces = nil
	}
	aliases := map[string]bool{}
	for _, di := range existing {
		if di.Alias == nil {
			continue
		}
		if aliases[di.Alias.Name] {
			return fmt.Errorf("domain XML: two interfaces with alias %q: refusing to guess which to replace", di.Alias.Name)
		}
		aliases[di.Alias.Name] = true
	}
	if err := phase2.Render(vmi, items, dom, binding.RenderOptions{InterfaceType: binding.InterfaceEthernet, ResolvConf: resolv}); err != nil {
		return err
	}
	var added []libvirtxml.DomainInterface
	if dom.Devices != nil {
		added = dom.Devices.Interfaces
	}
	byAlias := map[string]int{}
	for i, di := range added {
		if di.Alias != nil {
			byAlias[di.Alias.Name] = i
		}
	}
	used := map[int]bool{}
	merged := make([]libvirtxml.DomainInterface, 0, len(existing)+len(added))
	for _, di := range existing {
		if di.Alias != nil {
			if i, ok := byAlias[di.Alias.Name]; ok {
				merged = append(merged, added[i])
				used[i] = true
				continue
			}
		}
		merged = append(merged, di)
	}
	for i, di := range added {
		if !used[i] {
			merged = append(merged, di)
		}
	}
	if dom.Devices == nil {
		dom.Devices = &libvirtxml.DomainDeviceList{}
	}
	dom.Devices.Interfaces = merged
	return nil
}

// startDHCP starts a DHCP server per interface whose binding asks for one
// (binding.DHCPServer) and whose record has IPAM, once per interface; it
// returns when each is bound. Each server is then watched (see
// [sidecar.supervise]).
func (s *sidecar) startDHCP(ctx context.Context, vmi *api.VMI, items []phase2.Item) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, it := range items {
		name := it.Pair.Interface.Name
		if _, ok := it.Binding.(binding.DHCPServer); !ok || s.dhcp[name] != nil {
			continue
		}
		pair, item := it.Pair, it
		// The launcher hook's code path (phase2.DHCPConfig).
		configFor := func(rec *cache.Interface) (*dhcp.Config, error) {
			resolv, err := os.ReadFile(s.cfg.ResolvConf)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("resolv.conf: %w", err)
			}
			return phase2.DHCPConfig(vmi, item, rec, resolv)
		}
		cfg, err := configFor(it.Record)
		if err != nil {
			return fmt.Errorf("interface %q: %w", name, err)
		}
		if cfg == nil {
			s.log.Info("no IPAM: no DHCP server", "interface", name)
			continue
		}
		again := func() (*dhcp.Config, error) {
			rec, err := s.record(vmi, pair)
			if err != nil {
				return nil, err
			}
			return configFor(rec)
		}
		// Without CAP_NET_RAW (a non-root VMI's sidecar) the server logs
		// once that router advertisements are off and serves DHCPv4 and
		// DHCPv6 all the same.
		run, err := s.serve(ctx, cfg, again)
		if err != nil {
			return fmt.Errorf("interface %q: %w", name, err)
		}
		s.dhcp[name] = run
	}
	return nil
}

// serve starts a server for cfg and returns once it is bound; the server
// runs until Shutdown, watched by supervise, which rebuilds its
// configuration with again when it restarts it.
func (s *sidecar) serve(ctx context.Context, cfg *dhcp.Config, again func() (*dhcp.Config, error)) (*runningDHCP, error) {
	// The servers outlive the call: they run until Shutdown.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run, err := s.start(sctx, cfg)
	if err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		default:
		}
	}
	if err != nil {
		cancel()
		if run != nil {
			<-run.done
		}
		return nil, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.supervise(sctx, cfg, run, again)
	}()
	return &runningDHCP{cancel: cancel}, nil
}

// server is one DHCP server while it runs.
type server struct {
	stop    context.CancelFunc
	done    chan error
	ifindex int
}

// start starts a server for cfg and waits until it is bound.
func (s *sidecar) start(ctx context.Context, cfg *dhcp.Config) (*server, error) {
	idx, err := s.ifindex(cfg.Bridge)
	if err != nil {
		return nil, err
	}
	srv, err := dhcp.NewServer(cfg, s.log, dhcp.WithNetNS(s.cfg.NetNS))
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	run := &server{stop: stop, done: make(chan error, 1), ifindex: idx}
	go func() { run.done <- srv.Serve(sctx) }()
	select {
	case <-srv.Ready():
		s.log.Info("DHCP server started", "interface", cfg.Interface, "bridge", cfg.Bridge, "mac", cfg.MAC.String(), "address", cfg.Address.String())
		return run, nil
	case err := <-run.done:
		stop()
		if err == nil {
			err = errors.New("DHCP server stopped before it was ready")
		}
		return nil, err
	}
}

// ifindex is the index of the link named name in the pod's namespace (0
// when there is none).
func (s *sidecar) ifindex(name string) (int, error) {
	idx := 0
	err := nsexec.Do(s.cfg.NetNS, func() error {
		ifi, err := net.InterfaceByName(name)
		if err == nil {
			idx = ifi.Index
		}
		return nil
	})
	return idx, err
}

// supervise watches a server until ctx ends: every WatchInterval it checks
// that the server's bridge is still the link it bound to. A server bound
// to a bridge that went away (the CNI's DEL) hears nothing any more, even
// once a bridge of the same name is back (an ADD: another link): it is
// stopped with an error in the log, and started again, with the
// configuration of the hand-off record then on the tap, once the bridge
// is back. A server that fails is reported and restarted the same way.
func (s *sidecar) supervise(ctx context.Context, cfg *dhcp.Config, run *server, again func() (*dhcp.Config, error)) {
	every := s.cfg.WatchInterval
	if every <= 0 {
		every = DefaultWatchInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	name, bridge := cfg.Interface, cfg.Bridge
	for {
		var done chan error
		if run != nil {
			done = run.done
		}
		select {
		case <-ctx.Done():
			if run != nil {
				run.stop()
				<-run.done
			}
			return
		case err := <-done:
			s.log.Error("DHCP server stopped; restarting it once its bridge is there", "interface", name, "bridge", bridge, "error", fmt.Sprint(err))
			run.stop()
			run = nil
		case <-tick.C:
			idx, err := s.ifindex(bridge)
			if err != nil {
				s.log.Error("DHCP server: cannot see the pod's namespace", "interface", name, "error", err.Error())
				continue
			}
			if run != nil && idx == run.ifindex {
				continue
			}
			if run != nil {
				s.log.Error("DHCP server's bridge went away or was made again; stopping the server", "interface", name, "bridge", bridge)
				run.stop()
				<-run.done
				run = nil
			}
			if idx == 0 {
				continue
			}
			c, err := again()
			if err == nil && c == nil {
				err = errors.New("the interface's record no longer asks for a DHCP server")
			}
			if err != nil {
				s.log.Error("DHCP server not restarted", "interface", name, "error", err.Error())
				continue
			}
			if run, err = s.start(ctx, c); err != nil {
				s.log.Error("DHCP server not restarted", "interface", name, "error", err.Error())
				run = nil
				continue
			}
			bridge = c.Bridge
			s.log.Info("DHCP server restarted on the new bridge", "interface", name, "bridge", bridge)
		}
	}
}

func (s *sidecar) stopDHCP() {
	s.mu.Lock()
	for _, r := range s.dhcp {
		r.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
