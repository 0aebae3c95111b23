package phase2

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/phase2/dhcp"
)

// DHCPOptions configure [NewDHCPServers]; the zero value serves in this
// process's network namespace, with the DHCP defaults for DNS.
type DHCPOptions struct {
	// NetNS is the path of the pod's network namespace the servers serve
	// in (/proc/<pid>/ns/net, /run/netns/<name>); "" is this process's.
	NetNS string
	// ResolvConf is the pod's resolv.conf, read at each start for the DNS
	// servers and search domains; a missing file gives the DHCP defaults
	// (with a warning in the log); "" reads none.
	ResolvConf string
	// Hostname, when set, replaces the VMI's hostname in the replies
	// (option 12).
	Hostname string
	// Logger receives a line per server started, stopped or restarted;
	// nil discards.
	Logger *slog.Logger
	// Watch, when positive, has each server supervised: every Watch, its
	// bridge is looked up in the namespace. A server bound to a bridge
	// that went away (the CNI's DEL) hears nothing any more, even once a
	// bridge of that name is back (an ADD: another link); it is stopped,
	// with an error in the log, and started again once the bridge is
	// there, from the record Records then gives. A server that fails is
	// restarted the same way. With 0 a server that fails stays stopped
	// and [DHCPServers.Wait] returns its error.
	Watch time.Duration
	// Records gives a supervised server's record again on a restart;
	// required with Watch.
	Records Records
}

// ServerInfo describes one running DHCP server.
type ServerInfo struct {
	Interface string
	Bridge    string
	MAC       string
	// Address is the address served with its prefix: the IPv4 one, or the
	// IPv6 one when the pod is single-stack IPv6.
	Address string
	// IPv6Address is the address DHCPv6 serves ("" without DHCPv6).
	IPv6Address string
	Hostname    string
}

// DHCPServers are the DHCP servers of one VM's interfaces, at most one per
// interface: the one DHCP starter of prestart.Hook (at start and on a
// live update through [Sync]) and of the binding sidecar. Each server
// is configured from its interface's item, runs in its own
// goroutine and serves until [DHCPServers.Stop], [DHCPServers.StopAll]
// or the end of the context given to [NewDHCPServers]. Its methods may be
// called from several goroutines.
type DHCPServers struct {
	opts   DHCPOptions
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// ops serializes the starts and stops, so that an interface never
	// gets two servers, and orders them before StopAll's and Wait's wait.
	ops sync.Mutex
	// mu guards servers (and their info, which a restart changes) and
	// links.
	mu      sync.Mutex
	servers []*dhcpServer
	// links are the bridges of the interfaces started, served or not,
	// as they were at their start ([DHCPServers.Stale]).
	links map[string]linkID
}

// linkID is a link by name and index.
type linkID struct {
	name  string
	index int
}

// dhcpServer is the server of one interface, supervised or not.
type dhcpServer struct {
	iface string
	info  ServerInfo // guarded by DHCPServers.mu
	stop  context.CancelFunc
	done  chan struct{}
	err   error // set before done is closed
}

// NewDHCPServers returns the servers of a VM, none started yet; they serve
// until ctx ends or StopAll. It fails only for a Watch without Records.
func NewDHCPServers(ctx context.Context, opts DHCPOptions) (*DHCPServers, error) {
	if opts.Watch > 0 && opts.Records == nil {
		return nil, errors.New("phase2: DHCPOptions.Watch needs Records to read a record again")
	}
	sctx, cancel := context.WithCancel(ctx)
	return &DHCPServers{opts: opts, log: cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)), ctx: sctx, cancel: cancel}, nil
}

// Start starts the DHCP server of the item's interface and returns once it
// is bound (ctx bounds that wait only). It does nothing when the interface
// has a server already (running, or failed: [DHCPServers.Wait] reports
// it), when its binding serves no DHCP ([binding.DHCPServer]) or when its
// record has no IPAM. Either way, unless it has a server already, it
// notes which link the record's bridge is now ([DHCPServers.Stale]).
func (s *DHCPServers) Start(ctx context.Context, vmi *api.VMI, it Item) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	return s.start(ctx, vmi, it)
}

func (s *DHCPServers) start(ctx context.Context, vmi *api.VMI, it Item) error {
	name := it.Pair.Interface.Name
	if s.find(name) >= 0 {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("interface %q: the DHCP servers are stopped: %w", name, err)
	}
	if err := s.track(name, it.Record); err != nil {
		return err
	}
	cfg, err := s.config(vmi, it, it.Record)
	if err != nil || cfg == nil {
		return err
	}
	sctx, stop := context.WithCancel(s.ctx)
	b, err := s.bind(ctx, sctx, cfg)
	if err != nil {
		stop()
		return fmt.Errorf("interface %q: DHCP server: %w", name, err)
	}
	srv := &dhcpServer{iface: name, info: infoOf(cfg), stop: stop, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(srv.done)
		defer stop()
		srv.err = s.serve(sctx, vmi, it, srv, b)
	}()
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	s.log.Info("DHCP server started", "interface", name, "bridge", cfg.Bridge, "mac", srv.info.MAC,
		"address", srv.info.Address, "ipv6Address", srv.info.IPv6Address, "hostname", cfg.Hostname)
	return nil
}

// Stop stops the interface's server, if it has one, and waits for it; the
// error is the one it failed with, if it did.
func (s *DHCPServers) Stop(iface string) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	return s.stopOne(iface)
}

func (s *DHCPServers) stopOne(iface string) error {
	s.mu.Lock()
	delete(s.links, iface)
	i := s.find(iface)
	if i < 0 {
		s.mu.Unlock()
		return nil
	}
	srv := s.servers[i]
	s.servers = slices.Delete(s.servers, i, i+1)
	s.mu.Unlock()
	srv.stop()
	<-srv.done
	s.log.Info("DHCP server stopped", "interface", iface)
	return srv.err
}

// Sync makes the servers match items: it starts the server of each item
// (none if the interface has one) and stops those of interfaces that are
// no longer among them (state: absent, or gone from the VMI). The binding
// sidecar calls it with the items of each domain it renders.
func (s *DHCPServers) Sync(ctx context.Context, vmi *api.VMI, items []Item) error {
	s.ops.Lock()
	defer s.ops.Unlock()
	var errs []error
	s.mu.Lock()
	for iface := range s.links {
		if !slices.ContainsFunc(items, func(it Item) bool { return it.Pair.Interface.Name == iface }) {
			delete(s.links, iface)
		}
	}
	s.mu.Unlock()
	for _, srv := range slices.Clone(s.servers) {
		if !slices.ContainsFunc(items, func(it Item) bool { return it.Pair.Interface.Name == srv.iface }) {
			if err := s.stopOne(srv.iface); err != nil {
				errs = append(errs, fmt.Errorf("interface %q: stop DHCP server: %w", srv.iface, err))
			}
		}
	}
	for _, it := range items {
		if err := s.start(ctx, vmi, it); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// Stale reports whether the bridge of the interface (its record's, as it
// was when the interface was started, with a server or without one: no
// IPAM, a binding that serves no DHCP) is gone or another link under its
// name: phase1 made the interface again (an unplug and a plug between two
// looks), and whatever was attached to the old bridge and its tap, a
// server and the VM's device alike, is on links that no longer exist. An
// interface not started (or stopped since), or whose record names no
// bridge, is not stale.
func (s *DHCPServers) Stale(iface string) (bool, error) {
	s.mu.Lock()
	l, ok := s.links[iface]
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	now, err := s.ifindex(l.name)
	if err != nil {
		return false, fmt.Errorf("interface %q: bridge %s: %w", iface, l.name, err)
	}
	return now != l.index, nil
}

// track notes the index of the record's bridge at the interface's start.
func (s *DHCPServers) track(iface string, rec *cache.Interface) error {
	if rec == nil || rec.Bridge == "" {
		return nil
	}
	idx, err := s.ifindex(rec.Bridge)
	if err != nil {
		return fmt.Errorf("interface %q: bridge %s: %w", iface, rec.Bridge, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.links == nil {
		s.links = map[string]linkID{}
	}
	s.links[iface] = linkID{name: rec.Bridge, index: idx}
	return nil
}

// Servers describes the servers, in the order they were started.
func (s *DHCPServers) Servers() []ServerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ServerInfo, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.info
	}
	return out
}

// Wait blocks until the servers' context ends (or StopAll) and every
// server has stopped, and returns their failures joined; a server that
// stopped because its context ended has not failed.
func (s *DHCPServers) Wait() error {
	<-s.ctx.Done()
	// Once a start in progress is over, none comes: the context ended.
	s.ops.Lock()
	defer s.ops.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, srv := range s.servers {
		if srv.err != nil {
			errs = append(errs, srv.err)
		}
	}
	return errors.Join(errs...)
}

// StopAll stops every server and waits for them (see Wait); no server
// starts afterwards.
func (s *DHCPServers) StopAll() error {
	s.cancel()
	return s.Wait()
}

// find is the index of the interface's server, or -1; s.mu or s.ops is held.
func (s *DHCPServers) find(iface string) int {
	return slices.IndexFunc(s.servers, func(srv *dhcpServer) bool { return srv.iface == iface })
}

// config is the server configuration of the item with record rec, the one
// DHCP configuration path of the hook and the binding sidecar: the item's
// binding says what it serves ([binding.DHCPServer]), the pod's
// resolv.conf gives the DNS servers and search domains. It is nil when the
// binding serves no DHCP or the record has no IPAM.
func (s *DHCPServers) config(vmi *api.VMI, it Item, rec *cache.Interface) (*dhcp.Config, error) {
	name := it.Pair.Interface.Name
	ds, ok := it.Binding.(binding.DHCPServer)
	if !ok {
		return nil, nil
	}
	svc := ds.DHCPService(rec)
	if !svc.Serves() {
		return nil, nil
	}
	resolv, err := s.resolvConf()
	if err != nil {
		return nil, err
	}
	cfg, err := dhcp.NewConfigFor(vmi, it.Pair.Interface, rec, resolv,
		dhcp.Service{IPv4: svc.IPv4, IPv6: svc.IPv6, RequireMAC: svc.RequireMAC})
	if errors.Is(err, dhcp.ErrIPAMDisabled) {
		s.log.Info("no IPAM: no DHCP server", "interface", name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w", name, err)
	}
	if s.opts.Hostname != "" {
		cfg.Hostname = s.opts.Hostname
	}
	return cfg, nil
}

// resolvConf reads the pod's resolv.conf; a missing one means the DHCP
// defaults. The result is never nil.
func (s *DHCPServers) resolvConf() ([]byte, error) {
	if s.opts.ResolvConf == "" {
		return []byte{}, nil
	}
	b, err := os.ReadFile(s.opts.ResolvConf)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.log.Warn("no resolv.conf; DHCP serves the default DNS server and search domain", "path", s.opts.ResolvConf)
		return []byte{}, nil
	case err != nil:
		return nil, fmt.Errorf("resolv.conf: %w", err)
	}
	return b, nil
}

// bound is one dhcp.Server while it serves.
type bound struct {
	stop    context.CancelFunc
	done    chan error
	ifindex int // of its bridge when it bound (supervised servers)
}

// bind starts a dhcp.Server for cfg under sctx and waits until it is
// bound, or fails, or ctx ends.
func (s *DHCPServers) bind(ctx, sctx context.Context, cfg *dhcp.Config) (*bound, error) {
	idx := 0
	if s.opts.Watch > 0 {
		var err error
		if idx, err = s.ifindex(cfg.Bridge); err != nil {
			return nil, err
		}
	}
	var opts []dhcp.Option
	if s.opts.NetNS != "" {
		opts = append(opts, dhcp.WithNetNS(s.opts.NetNS))
	}
	srv, err := dhcp.NewServer(cfg, s.log, opts...)
	if err != nil {
		return nil, err
	}
	rctx, stop := context.WithCancel(sctx)
	b := &bound{stop: stop, done: make(chan error, 1), ifindex: idx}
	go func() { b.done <- srv.Serve(rctx) }()
	select {
	case <-srv.Ready():
		return b, nil
	case err := <-b.done:
		stop()
		if err == nil {
			if err = sctx.Err(); err == nil {
				err = errors.New("stopped before it was bound")
			}
		}
		return nil, err
	case <-ctx.Done():
		stop()
		<-b.done
		return nil, ctx.Err()
	}
}

// serve runs until sctx ends: it waits for the server b, or, supervised,
// watches it (see [DHCPOptions.Watch]).
func (s *DHCPServers) serve(sctx context.Context, vmi *api.VMI, it Item, srv *dhcpServer, b *bound) error {
	if s.opts.Watch <= 0 {
		err := <-b.done
		if err != nil {
			s.log.Error("DHCP server failed", "interface", srv.iface, "error", err.Error())
		}
		return err
	}
	tick := time.NewTicker(s.opts.Watch)
	defer tick.Stop()
	name := srv.iface
	s.mu.Lock()
	bridge := srv.info.Bridge
	s.mu.Unlock()
	for {
		var done chan error
		if b != nil {
			done = b.done
		}
		select {
		case <-sctx.Done():
			if b != nil {
				b.stop()
				<-b.done
			}
			return nil
		case err := <-done:
			s.log.Error("DHCP server stopped; restarting it once its bridge is there", "interface", name, "bridge", bridge, "error", fmt.Sprint(err))
			b.stop()
			b = nil
		case <-tick.C:
			idx, err := s.ifindex(bridge)
			if err != nil {
				s.log.Error("DHCP server: cannot see the pod's namespace", "interface", name, "error", err.Error())
				continue
			}
			if b != nil && idx == b.ifindex {
				continue
			}
			if b != nil {
				s.log.Error("DHCP server's bridge went away or was made again; stopping the server", "interface", name, "bridge", bridge)
				b.stop()
				<-b.done
				b = nil
			}
			if idx == 0 {
				continue
			}
			cfg, err := s.reconfig(sctx, vmi, it)
			if err == nil {
				b, err = s.bind(sctx, sctx, cfg)
			}
			if err != nil {
				s.log.Error("DHCP server not restarted", "interface", name, "error", err.Error())
				continue
			}
			bridge = cfg.Bridge
			s.mu.Lock()
			srv.info = infoOf(cfg)
			s.mu.Unlock()
			s.log.Info("DHCP server restarted on the new bridge", "interface", name, "bridge", bridge)
		}
	}
}

// reconfig is the configuration of the item's server from the record its
// source gives now.
func (s *DHCPServers) reconfig(ctx context.Context, vmi *api.VMI, it Item) (*dhcp.Config, error) {
	rec, err := s.opts.Records.Record(ctx, vmi, it.Pair)
	if err != nil {
		return nil, err
	}
	cfg, err := s.config(vmi, it, rec)
	if err == nil && cfg == nil {
		err = errors.New("the interface's record no longer asks for a DHCP server")
	}
	return cfg, err
}

// ifindex is the index of the link named name in the servers' namespace
// (0 when there is none).
func (s *DHCPServers) ifindex(name string) (int, error) {
	idx := 0
	err := nsexec.Do(s.opts.NetNS, func() error {
		if ifi, err := net.InterfaceByName(name); err == nil {
			idx = ifi.Index
		}
		return nil
	})
	return idx, err
}

// infoOf describes the server of cfg.
func infoOf(cfg *dhcp.Config) ServerInfo {
	info := ServerInfo{Interface: cfg.Interface, Bridge: cfg.Bridge, Hostname: cfg.Hostname}
	if cfg.MAC != nil {
		info.MAC = cfg.MAC.String()
	}
	if cfg.HasIPv4() {
		info.Address = cfg.Address.String()
	}
	if cfg.IPv6 != nil {
		info.IPv6Address = cfg.IPv6.Address.String()
		if info.Address == "" {
			info.Address = info.IPv6Address // single-stack IPv6: DHCPv6 only
		}
	}
	return info
}
