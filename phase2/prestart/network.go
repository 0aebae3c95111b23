package prestart

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/dhcp"
)

// Network is the network step: the interfaces (phase2.Render, unless the
// domain has them already) and a DHCP server for every interface whose
// binding asks for one ([binding.DHCPServer]) and whose record has IPAM.
type Network struct{}

// Name is "network".
func (Network) Name() string { return "network" }

// Run enriches the domain and starts the DHCP servers; it returns once
// every server is bound, or with the first that could not bind.
func (Network) Run(ctx context.Context, st *State) error {
	h := st.Hook
	items, err := phase2.ReadRecords(ctx, h.VMI, h.Store, phase2.Options{Registry: h.Registry})
	if err != nil {
		return err
	}
	if hasInterfaces(items, h.Domain) {
		st.Log.Info("domain has the VMI's interfaces already; not enriched")
	} else {
		if err := phase2.Render(h.VMI, items, h.Domain, st.Render); err != nil {
			return err
		}
		st.Log.Info("interfaces added to the domain", "count", len(items))
	}
	if n := h.Dirs.HotplugPorts; n != 0 {
		// The interfaces may have taken spare root ports Build reserved.
		if err := domxml.ReserveHotplugPorts(h.VMI, h.Domain, n); err != nil {
			return err
		}
	}
	for _, it := range items {
		if err := st.startDHCP(ctx, h.VMI, it); err != nil {
			return err
		}
	}
	return nil
}

// startDHCP starts the DHCP server of one interface, if its binding asks
// for one and its record has IPAM, and waits until it is bound: at start
// (the network step) and on a hot-plug ([Running.DHCP]).
func (st *State) startDHCP(ctx context.Context, vmi *api.VMI, it phase2.Item) error {
	if ds, ok := it.Binding.(binding.DHCPServer); !ok || !ds.DHCPService(it.Record).Serves() {
		return nil
	}
	resolv, err := readResolvConf(st)
	if err != nil {
		return err
	}
	cfg, err := phase2.DHCPConfig(vmi, it, it.Record, resolv)
	if err != nil {
		return fmt.Errorf("interface %q: %w", it.Pair.Interface.Name, err)
	}
	if cfg == nil {
		st.Log.Info("no IPAM: no DHCP server", "interface", it.Pair.Interface.Name)
		return nil
	}
	if st.Hook.Hostname != "" {
		cfg.Hostname = st.Hook.Hostname
	}
	return st.serve(ctx, cfg)
}

// DHCP is the live update's DHCP starter ([phase2.Sync]): it starts and
// stops the servers of single interfaces beside the ones the run started,
// in the same namespace, with the same resolv.conf and hostname. A server
// it starts serves until Stop, [Running.Stop] or the end of the context
// given to [Hook.Run].
func (r *Running) DHCP() phase2.DHCP { return liveDHCP{r} }

type liveDHCP struct{ r *Running }

// Start starts the interface's server unless it has one.
func (l liveDHCP) Start(ctx context.Context, vmi *api.VMI, it phase2.Item) error {
	if l.r.server(it.Pair.Interface.Name) != nil {
		return nil
	}
	if err := l.r.st.serveCtx.Err(); err != nil {
		return fmt.Errorf("interface %q: the run's DHCP servers are stopped: %w", it.Pair.Interface.Name, err)
	}
	return l.r.st.startDHCP(ctx, vmi, it)
}

// Stop stops the interface's server and waits for it.
func (l liveDHCP) Stop(iface string) error {
	st := l.r.st
	st.mu.Lock()
	i := slices.IndexFunc(st.servers, func(s *runningServer) bool { return s.info.Interface == iface })
	if i < 0 {
		st.mu.Unlock()
		return nil
	}
	s := st.servers[i]
	st.servers = slices.Delete(st.servers, i, i+1)
	st.mu.Unlock()
	s.stop()
	<-s.done
	st.Log.Info("DHCP server stopped", "interface", iface)
	return s.err
}

// server is the running server of an interface, or nil.
func (r *Running) server(iface string) *runningServer {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	for _, s := range r.st.servers {
		if s.info.Interface == iface {
			return s
		}
	}
	return nil
}

// hasInterfaces reports whether the domain has the device of one of the
// items, found by the alias its binding gives it (binding.DeviceAlias).
func hasInterfaces(items []phase2.Item, dom *libvirtxml.Domain) bool {
	if dom.Devices == nil {
		return false
	}
	names := map[string]bool{}
	for _, it := range items {
		names[binding.DeviceAlias(it.Binding, it.Pair.Interface.Name)] = true
	}
	for _, i := range dom.Devices.Interfaces {
		if i.Alias != nil && names[i.Alias.Name] {
			return true
		}
	}
	for _, d := range dom.Devices.Hostdevs {
		if d.Alias != nil && names[d.Alias.Name] {
			return true
		}
	}
	return false
}

// readResolvConf reads the pod's resolv.conf; a missing one means the DHCP
// defaults. The result is never nil.
func readResolvConf(st *State) ([]byte, error) {
	b, err := os.ReadFile(st.Hook.ResolvConf)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st.Log.Warn("no resolv.conf; DHCP serves the default DNS server and search domain", "path", st.Hook.ResolvConf)
		return []byte{}, nil
	case err != nil:
		return nil, fmt.Errorf("resolv.conf: %w", err)
	}
	return b, nil
}

// serve starts one DHCP server and waits until it is bound.
func (st *State) serve(ctx context.Context, cfg *dhcp.Config) error {
	var opts []dhcp.Option
	if st.Hook.NetNS != "" {
		opts = append(opts, dhcp.WithNetNS(st.Hook.NetNS))
	}
	srv, err := dhcp.NewServer(cfg, st.Hook.Logger, opts...)
	if err != nil {
		return fmt.Errorf("interface %q: %w", cfg.Interface, err)
	}
	mac := ""
	if cfg.MAC != nil {
		mac = cfg.MAC.String()
	}
	info := ServerInfo{Interface: cfg.Interface, Bridge: cfg.Bridge, MAC: mac, Hostname: cfg.Hostname}
	if cfg.HasIPv4() {
		info.Address = cfg.Address.String()
	}
	if cfg.IPv6 != nil {
		info.IPv6Address = cfg.IPv6.Address.String()
		if info.Address == "" {
			info.Address = info.IPv6Address // single-stack IPv6: DHCPv6 only
		}
	}
	sctx, stop := context.WithCancel(st.serveCtx)
	done := make(chan struct{})
	rs := &runningServer{info: info, stop: stop, done: done}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		defer close(done)
		defer stop()
		rs.err = srv.Serve(sctx)
	}()
	select {
	case <-srv.Ready():
	case <-done:
		if rs.err == nil {
			rs.err = sctx.Err()
		}
		return fmt.Errorf("interface %q: DHCP server: %w", cfg.Interface, rs.err)
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
	st.mu.Lock()
	st.servers = append(st.servers, rs)
	st.mu.Unlock()
	st.Log.Info("DHCP server started", "interface", cfg.Interface, "bridge", cfg.Bridge,
		"mac", mac, "address", info.Address, "ipv6Address", info.IPv6Address, "hostname", cfg.Hostname)
	return nil
}

// Sync is [phase2.Sync] for the VM this run started: the same records
// store, registry and render choices (the interface type chosen at start)
// as the network step, and its DHCP servers ([Running.DHCP]). A launcher
// calls it with the running domain's XML whenever the VMI changes, and
// applies the changes it returns with libvirt.
func (r *Running) Sync(ctx context.Context, runningXML string, vmi *api.VMI) ([]phase2.DeviceChange, error) {
	h := r.st.Hook
	return phase2.Sync(ctx, runningXML, vmi, h.Store, r.DHCP(), phase2.Options{Registry: h.Registry, Render: r.st.Render})
}
