package dhcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/ndp"
	"golang.org/x/net/ipv6"
)

// routerLifetime is how long the guest keeps the default route of one
// advertisement; periodic advertisements refresh it long before.
const routerLifetime = 30 * time.Minute

// minSolicitedGap rate-limits answers to router solicitations.
const minSolicitedGap = time.Second

var (
	allNodes   = netip.MustParseAddr("ff02::1")
	allRouters = netip.MustParseAddr("ff02::2")
)

// listenRA opens the ICMPv6 socket on the bridge's link-local address,
// retrying while that address is still tentative (duplicate address
// detection), for at most the configured wait.
func (s *Server) listenRA(ctx context.Context, ifi *net.Interface) (*ndp.Conn, error) {
	const step = 100 * time.Millisecond
	var lastErr error
	for i := 0; i <= int(s.llWait/step); i++ {
		c, _, err := ndp.Listen(ifi, ndp.LinkLocal)
		if err == nil {
			if err := setupRA(c); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(step):
		}
	}
	return nil, fmt.Errorf("no usable link-local address after %s: %w", s.llWait, lastErr)
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
// the MTU and the VM's prefix as on-link (not for SLAAC).
func RouterAdvertisement(cfg *Config, bridgeMAC net.HardwareAddr) *ndp.RouterAdvertisement {
	ra := &ndp.RouterAdvertisement{
		CurrentHopLimit:      64,
		ManagedConfiguration: true,
		RouterLifetime:       routerLifetime,
	}
	if len(bridgeMAC) == 6 {
		ra.Options = append(ra.Options, &ndp.LinkLayerAddress{Direction: ndp.Source, Addr: bridgeMAC})
	}
	if cfg.MTU != 0 {
		ra.Options = append(ra.Options, ndp.NewMTU(uint32(cfg.MTU)))
	}
	p := cfg.IPv6.Address.Masked()
	ra.Options = append(ra.Options, &ndp.PrefixInformation{
		PrefixLength:      uint8(p.Bits()),
		OnLink:            true,
		ValidLifetime:     cfg.Lease,
		PreferredLifetime: cfg.Lease,
		Prefix:            p.Addr(),
	})
	return ra
}

// advertise sends an advertisement at once, then every raInterval and in
// answer to solicitations (at most one per minSolicitedGap), until ctx
// ends or the socket fails.
func (s *Server) advertise(ctx context.Context, c *ndp.Conn, mac net.HardwareAddr) error {
	ra := RouterAdvertisement(s.cfg, mac)
	var (
		mu   sync.Mutex
		last time.Time
	)
	send := func(solicited bool) error {
		mu.Lock()
		defer mu.Unlock()
		if solicited && time.Since(last) < minSolicitedGap {
			return nil
		}
		last = time.Now()
		return c.WriteTo(ra, nil, allNodes)
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
				if err := send(true); err != nil {
					s.log.Warn("dhcp: router advertisement", "interface", s.cfg.Bridge, "err", err)
				}
			}
		}
	}()
	if err := send(false); err != nil {
		s.log.Warn("dhcp: router advertisement", "interface", s.cfg.Bridge, "err", err)
	}
	t := time.NewTicker(s.raInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Close()
			<-readErr
			return nil
		case err := <-readErr:
			return err
		case <-t.C:
			if err := send(false); err != nil {
				s.log.Warn("dhcp: router advertisement", "interface", s.cfg.Bridge, "err", err)
			}
		}
	}
}
