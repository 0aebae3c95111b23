package prestart

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/binding"
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
	var resolv []byte
	for _, it := range items {
		ds, ok := it.Binding.(binding.DHCPServer)
		if !ok {
			continue
		}
		svc := ds.DHCPService(it.Record)
		if !svc.Serves() {
			continue
		}
		if resolv == nil {
			if resolv, err = readResolvConf(st); err != nil {
				return err
			}
		}
		cfg, err := dhcp.NewConfigFor(h.VMI, it.Pair.Interface, it.Record, resolv,
			dhcp.Service{IPv4: svc.IPv4, IPv6: svc.IPv6, RequireMAC: svc.RequireMAC})
		if errors.Is(err, dhcp.ErrIPAMDisabled) {
			st.Log.Info("no IPAM: no DHCP server", "interface", it.Pair.Interface.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("interface %q: %w", it.Pair.Interface.Name, err)
		}
		if h.Hostname != "" {
			cfg.Hostname = h.Hostname
		}
		if err := st.serve(ctx, cfg); err != nil {
			return err
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
	rs := &runningServer{info: info}
	done := make(chan struct{})
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		defer close(done)
		rs.err = srv.Serve(st.serveCtx)
	}()
	select {
	case <-srv.Ready():
	case <-done:
		if rs.err == nil {
			rs.err = st.serveCtx.Err()
		}
		return fmt.Errorf("interface %q: DHCP server: %w", cfg.Interface, rs.err)
	case <-ctx.Done():
		return ctx.Err()
	}
	st.servers = append(st.servers, rs)
	st.Log.Info("DHCP server started", "interface", cfg.Interface, "bridge", cfg.Bridge,
		"mac", mac, "address", info.Address, "ipv6Address", info.IPv6Address, "hostname", cfg.Hostname)
	return nil
}
