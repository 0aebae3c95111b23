//go:build linux

// Package sidecar is the hook sidecar of virtnet's KubeVirt 1.x network
// binding plugins (cmd/virtnet-binding-sidecar is its main): [Run] serves
// KubeVirt's hook protocol on a unix socket and the DHCP servers of the
// VM's interfaces. See the command's documentation.
//
// Outside the compatibility promise: the module's programs are this
// package's users; its API changes with them, whatever the version
// (testrig/apicompat leaves kubevirt/ out).
package sidecar

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
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
	"github.com/virtnet/virtnet/kubevirt/hookapi/info"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/phase2"
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
	// Logger receives the sidecar's log; nil discards it.
	Logger *slog.Logger
	// ShutdownGrace bounds how long Run waits, once it stops, for calls
	// in progress (a client may hold a half-sent call for ever); then it
	// closes every connection, waits at most a second more for the gRPC
	// server (a handler that ignores its closed call is left behind),
	// stops the DHCP servers and returns. 0 means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// WatchInterval is how often each DHCP server's bridge is checked
	// (phase2.DHCPOptions.Watch: a server whose bridge went away or was
	// made again is restarted from the hand-off record then on the tap);
	// 0 means DefaultWatchInterval.
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
	// HandshakeTimeout bounds how long a new connection may take to send
	// its HTTP/2 preface and settings (gRPC's default is 120 s, during
	// which a silent connection holds one of MaxConnections).
	HandshakeTimeout = 10 * time.Second
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
// Each OnDefineDomain goes through phase2's launcher path, as the
// preStartHook does: the records from the hand-off (kvplugin.HandOff),
// phase2.Items and phase2.Render (an interface of the same alias replaced
// in place, the rest of KubeVirt's domain kept), then the DHCP servers
// made to match the VMI (phase2.DHCPServers.Sync, supervised).
func Run(ctx context.Context, cfg Config) error {
	cfg.SocketDir = cmp.Or(cfg.SocketDir, DefaultSocketDir)
	cfg.ResolvConf = cmp.Or(cfg.ResolvConf, "/etc/resolv.conf")
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
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
	watch := cfg.WatchInterval
	if watch <= 0 {
		watch = DefaultWatchInterval
	}
	// The DHCP servers outlive the calls, and the hook server's stop:
	// they run until Run ends.
	servers, err := phase2.NewDHCPServers(context.WithoutCancel(ctx), phase2.DHCPOptions{NetNS: cfg.NetNS,
		ResolvConf: cfg.ResolvConf, Logger: cfg.Logger, Watch: watch, Records: kvplugin.HandOff{NetNS: cfg.NetNS}})
	if err != nil {
		lis.Close()
		return err
	}
	defer servers.StopAll()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &sidecar{cfg: cfg, served: served, registry: registry.Default(), log: cfg.Logger, shutdown: cancel,
		dhcp: servers, calls: make(chan struct{}, MaxConcurrentCalls), release: make(chan struct{}, 1)}
	go s.releaseMemory(ctx)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(MaxMessageSize), grpc.MaxConcurrentStreams(MaxConcurrentCalls),
		grpc.UnaryInterceptor(s.limit), grpc.ConnectionTimeout(HandshakeTimeout))
	info.RegisterInfoServer(srv, s)
	v1alpha3.RegisterCallbacksServer(srv, s)
	conns := &connSet{Listener: netutil.LimitListener(lis, MaxConnections), open: map[net.Conn]struct{}{}}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(conns) }()
	cfg.Logger.Info("serving hooks", "socket", path, "plugin", cfg.Plugin, "version", Version)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	s.stop(srv, conns)
	_ = servers.StopAll() // a failed server was logged (and restarted)
	cfg.Logger.Info("stopped")
	return nil
}

// stop lets the calls in progress finish for at most ShutdownGrace, then
// closes every connection (calls in progress, connections that never sent
// a call, handshakes half done) and stops the server. It returns within
// ShutdownGrace plus stopWait whatever the clients do: a handler that
// does not return once its call is closed is left behind (Run's caller
// then exits).
func (s *sidecar) stop(srv *grpc.Server, conns *connSet) {
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
		return
	case <-t.C:
	}
	s.log.Warn("calls still open after the shutdown grace; closing them", "grace", grace.String())
	conns.closeAll()
	go srv.Stop()
	wait := time.NewTimer(stopWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
		s.log.Error("the hook server did not stop once its connections were closed; ending without it", "waited", stopWait.String())
	}
}

// stopWait bounds how long stop waits for the gRPC server once it closed
// its connections.
const stopWait = time.Second

// connSet is a listener that keeps the connections it accepted until they
// are closed, so that stop can close them all: gRPC's own Stop waits for
// a connection that has not finished its HTTP/2 handshake.
type connSet struct {
	net.Listener
	mu     sync.Mutex
	closed bool
	open   map[net.Conn]struct{}
}

func (l *connSet) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, set: l}
	l.open[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every connection accepted and still open, and those
// accepted from now on.
func (l *connSet) closeAll() {
	l.mu.Lock()
	l.closed = true
	open := l.open
	l.open = map[net.Conn]struct{}{}
	l.mu.Unlock()
	for c := range open {
		c.Close()
	}
}

// trackedConn leaves its connSet when closed.
type trackedConn struct {
	net.Conn
	set  *connSet
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.set.mu.Lock()
		delete(c.set.open, c)
		c.set.mu.Unlock()
	})
	return c.Conn.Close()
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
	// dhcp are the DHCP servers of the served interfaces, supervised.
	dhcp *phase2.DHCPServers
	// release asks releaseMemory for a pass (one pending at most).
	release chan struct{}
}

// releaseMemory returns to the kernel, after each OnDefineDomain, the
// memory the call used and no longer needs, until ctx ends. A call parses
// and writes the domain and decodes the VMI: a few megabytes that the
// runtime would keep mapped for minutes (the scavenger returns them
// slowly, and never below the heap's goal of 4 MB). The sidecar lives as
// long as its VM and is called a few times in that life (start, plug,
// migration), in every VM's pod of the node: BenchmarkSidecarRSS measured
// 7.2 MB of anonymous memory after 1,000 calls without this, 4.2 MB with
// it. A pass is a forced collection of a heap of a few megabytes (about
// a millisecond), run here, after the call's answer; calls that come
// while one runs share the next.
func (s *sidecar) releaseMemory(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.release:
			debug.FreeOSMemory()
		}
	}
}

// Info answers virt-launcher's collection of the hook sockets.
func (s *sidecar) Info(context.Context, *info.InfoParams) (*info.InfoResult, error) {
	return &info.InfoResult{
		Name:     cmp.Or(s.cfg.Plugin, "virtnet-binding-sidecar"),
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

// OnDefineDomain adds the served interfaces to the domain, then makes the
// DHCP servers match them: a server for each present interface (started
// once), none for an interface absent (state: absent) or no longer in the
// VMI.
func (s *sidecar) OnDefineDomain(ctx context.Context, p *v1alpha3.OnDefineDomainParams) (*v1alpha3.OnDefineDomainResult, error) {
	defer func() {
		select {
		case s.release <- struct{}{}:
		default: // one is pending: it covers this call too
		}
	}()
	out, items, vmi, err := s.define(ctx, p.GetDomainXML(), p.GetVmi())
	if err != nil {
		s.log.Error("OnDefineDomain", "error", err)
		return nil, err
	}
	if err := s.dhcp.Sync(ctx, vmi, items); err != nil {
		s.log.Error("DHCP", "error", err)
		return nil, err
	}
	return &v1alpha3.OnDefineDomainResult{DomainXML: out}, nil
}

// define renders the served interfaces into the domain: phase2's one path
// (Items, Render) with the hand-off records.
func (s *sidecar) define(ctx context.Context, domainXML, vmiJSON []byte) ([]byte, []phase2.Item, *api.VMI, error) {
	res, err := kvplugin.Resolve(vmiJSON, s.served)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("vmi: %w", err)
	}
	if len(res.VMI.Unknown) > 0 {
		s.log.Warn("the VMI has fields newer than this virtnet knows; they are ignored", "fields", res.VMI.Unknown)
	}
	src := kvplugin.HandOff{NetNS: s.cfg.NetNS, Plugins: res.Plugins}
	items, err := phase2.Items(ctx, res.VMI, res.Pairs, src, phase2.Options{Registry: s.registry})
	if err != nil || len(items) == 0 {
		return domainXML, nil, res.VMI, err
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
	if err := phase2.Render(res.VMI, items, &dom, binding.RenderOptions{InterfaceType: binding.InterfaceEthernet, ResolvConf: resolv}); err != nil {
		return nil, nil, nil, err
	}
	out, err := dom.Marshal()
	if err != nil {
		return nil, nil, nil, err
	}
	return []byte(out), items, res.VMI, nil
}
