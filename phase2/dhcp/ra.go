package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// routerLifetime is how long the guest keeps the default route of one
// advertisement; periodic advertisements refresh it long before. The DNS
// options (RDNSS, DNSSL) get the same lifetime.
const routerLifetime = 30 * time.Minute

// minSolicitedGap rate-limits answers to router solicitations.
const minSolicitedGap = time.Second

// raRetry is the pause before router advertisements start again after
// their socket failed.
const raRetry = time.Second

var (
	allNodes   = netip.MustParseAddr("ff02::1")
	allRouters = netip.MustParseAddr("ff02::2")
)

// errNoRawSocket is what [Server.routerAdvertisements] reports when the
// process may not open a raw ICMPv6 socket (no CAP_NET_RAW).
var errNoRawSocket = errors.New("no raw ICMPv6 socket (CAP_NET_RAW)")

// routerAdvertisements runs until ctx ends: it waits for the bridge's
// link-local address to be usable (it appears only once the bridge has a
// carrier, i.e. once QEMU opened the tap, and then passes duplicate address
// detection), advertises from it, and starts over when the socket fails.
// It never fails the server: without CAP_NET_RAW it logs once and returns.
func (s *Server) routerAdvertisements(ctx context.Context, ifi *net.Interface) {
	if err := s.canRawICMPv6(); err != nil {
		if errors.Is(err, errNoRawSocket) {
			s.raw.Warn("dhcp: router advertisements disabled, DHCPv4 and DHCPv6 keep serving; the guest needs its IPv6 default route another way",
				"interface", s.cfg.Bridge, "err", err)
			return
		}
		s.log.Warn("dhcp: router advertisements: raw socket check", "interface", s.cfg.Bridge, "err", err)
	}
	for ctx.Err() == nil {
		ll, err := s.waitLinkLocal(ctx, ifi.Index)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("dhcp: router advertisements: waiting for the bridge's link-local address", "interface", s.cfg.Bridge, "err", err)
				sleep(ctx, raRetry)
			}
			continue
		}
		err = s.advertiseFrom(ctx, ifi, ll)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("dhcp: router advertisements: socket failed, starting over", "interface", s.cfg.Bridge, "err", err)
			sleep(ctx, raRetry)
		}
	}
}

// advertiseFrom opens the sockets of the bridge ifi's router advertisements
// from its link-local address ll and advertises (see advertise) until ctx
// ends (nil) or a socket fails (the error). On a shared bridge they go as
// Ethernet frames from the pod's router (or ll without one) to the VM's
// MAC only, skipped while the bridge has not learnt the VM's port.
func (s *Server) advertiseFrom(ctx context.Context, ifi *net.Interface, ll netip.Addr) error {
	var c *ndp.Conn
	err := nsexec.Do(s.netns, func() error {
		var err error
		if c, _, err = ndp.Listen(byIndex(ifi), ndp.Addr(ll.String())); err != nil {
			return err
		}
		return setupRA(c)
	})
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return err
	}
	write := func(ra *ndp.RouterAdvertisement) error { return c.WriteTo(ra, nil, allNodes) }
	from := ll
	if s.cfg.IPv6.Shared {
		if s.cfg.IPv6.Router.IsValid() {
			from = s.cfg.IPv6.Router
		}
		f, err := s.openFrameSender(ifi)
		if err != nil {
			return err
		}
		defer f.close()
		write = func(ra *ndp.RouterAdvertisement) error {
			sent, err := f.send(ra, from)
			if err == nil && !sent {
				s.log.Debug("dhcp: router advertisement held back: the bridge has not learnt the VM's port yet", "interface", s.cfg.Bridge)
			}
			return err
		}
	}
	s.log.Info("dhcp: router advertisements started", "interface", s.cfg.Bridge, "from", from.String(), "toVMOnly", s.cfg.IPv6.Shared)
	return s.advertise(ctx, c, ifi.HardwareAddr, write)
}

// byIndex returns ifi named by its index: the ndp library uses the name as
// the IPv6 zone of every address it binds and sends to, and Go resolves a
// zone name in a process-wide cache, which can hold another namespace's
// link of the same name; a numeric zone is taken as the index.
func byIndex(ifi *net.Interface) *net.Interface {
	c := *ifi
	c.Name = strconv.Itoa(ifi.Index)
	return &c
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func setupRA(c *ndp.Conn) error {
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeRouterSolicitation)
	if err := c.SetICMPFilter(&f); err != nil {
		return fmt.Errorf("icmp filter: %w", err)
	}
	if err := c.JoinGroup(allRouters); err != nil {
		return fmt.Errorf("join %s: %w", allRouters, err)
	}
	return nil
}

// RouterAdvertisement is the advertisement the server sends: managed flag
// set (addresses come from DHCPv6), the bridge as default router, its MAC,
// the MTU, the VM's prefix as on-link (not for SLAAC), and the pod's IPv6
// nameservers (RDNSS) and search domains (DNSSL, RFC 8106) when there are
// any.
//
// On a shared bridge ([Config6.Shared]) the advertisement is the pod's
// router's, sent on its behalf (see [Config6.Router]): no source
// link-layer address (the VM resolves the router by neighbour discovery,
// and the router answers), a router lifetime only when there is a router,
// and the prefix the pod had on-link ([Config6.OnLink]) or none.
func RouterAdvertisement(cfg *Config, bridgeMAC net.HardwareAddr) *ndp.RouterAdvertisement {
	ra := &ndp.RouterAdvertisement{
		CurrentHopLimit:      64,
		ManagedConfiguration: true,
		RouterLifetime:       routerLifetime,
	}
	shared := cfg.IPv6.Shared
	if shared && !cfg.IPv6.Router.IsValid() {
		ra.RouterLifetime = 0
	}
	if len(bridgeMAC) == 6 && !shared {
		ra.Options = append(ra.Options, &ndp.LinkLayerAddress{Direction: ndp.Source, Addr: bridgeMAC})
	}
	if cfg.MTU != 0 {
		ra.Options = append(ra.Options, ndp.NewMTU(uint32(cfg.MTU)))
	}
	p := cfg.IPv6.Address.Masked()
	if shared {
		p = cfg.IPv6.OnLink
	}
	if p.IsValid() {
		ra.Options = append(ra.Options, &ndp.PrefixInformation{
			PrefixLength:      uint8(p.Bits()),
			OnLink:            true,
			ValidLifetime:     cfg.Lease,
			PreferredLifetime: cfg.Lease,
			Prefix:            p.Addr(),
		})
	}
	if len(cfg.IPv6.DNS) > 0 {
		ra.Options = append(ra.Options, &ndp.RecursiveDNSServer{Lifetime: routerLifetime, Servers: cfg.IPv6.DNS})
	}
	if len(cfg.Search) > 0 {
		ra.Options = append(ra.Options, &ndp.DNSSearchList{Lifetime: routerLifetime, DomainNames: cfg.Search})
	}
	return ra
}

// advertise sends an advertisement at once, then every raInterval and in
// answer to solicitations (at most one per minSolicitedGap), through
// write, until ctx ends (nil) or the socket fails (the error). It closes
// c when ctx ends, to stop reading.
func (s *Server) advertise(ctx context.Context, c *ndp.Conn, mac net.HardwareAddr, write func(*ndp.RouterAdvertisement) error) error {
	ra := RouterAdvertisement(s.cfg, mac)
	var (
		mu   sync.Mutex
		last time.Time
	)
	send := func(solicited bool) {
		mu.Lock()
		defer mu.Unlock()
		if solicited && time.Since(last) < minSolicitedGap {
			return
		}
		last = time.Now()
		if err := write(ra); err != nil {
			s.log.Warn("dhcp: router advertisement", "interface", s.cfg.Bridge, "err", err)
		}
	}
	readErr := make(chan error, 1)
	go func() {
		for {
			m, _, _, err := c.ReadFrom()
			var opErr *net.OpError
			switch {
			case err == nil:
			case errors.Is(err, net.ErrClosed) || ctx.Err() != nil:
				readErr <- nil
				return
			case errors.As(err, &opErr):
				readErr <- err
				return
			default:
				continue // a malformed message the library did not filter
			}
			if _, ok := m.(*ndp.RouterSolicitation); ok {
				send(true)
			}
		}
	}()
	send(false)
	t := time.NewTicker(s.raInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Close()
			<-readErr
			return nil
		case err := <-readErr:
			if err == nil {
				return errors.New("socket closed")
			}
			return err
		case <-t.C:
			send(false)
		}
	}
}
