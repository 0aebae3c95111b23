package dhcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/insomniacslk/dhcp/dhcpv6/server6"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// maxInFlight bounds the requests handled at once; more are dropped (the
// library starts one goroutine per packet, a flooding guest must not make
// that unbounded).
const maxInFlight = 8

// Option configures a [Server].
type Option func(*Server)

// WithNetNS makes [Server.Serve] create its sockets inside the network
// namespace at path (e.g. /var/run/netns/pod or /proc/<pid>/ns/net). Phase2
// already runs in the pod's namespace and needs no option; tests use it.
func WithNetNS(path string) Option { return func(s *Server) { s.netns = path } }

// Server is the single-client DHCP server of one bridge: DHCPv4 always,
// DHCPv6 and router advertisements when the configuration has IPv6.
type Server struct {
	cfg        *Config
	log        *slog.Logger // rate-limited: lines a packet can cause
	raw        *slog.Logger // once-per-run lines
	lim        *limiter
	netns      string
	raInterval time.Duration
	ready      chan struct{}
	served     atomic.Bool
	sem        chan struct{}
}

// NewServer returns a server for cfg logging to log (nil discards).
func NewServer(cfg *Config, log *slog.Logger, opts ...Option) (*Server, error) {
	if cfg == nil {
		return nil, &FieldError{Field: "config", Value: "<nil>", Reason: "a configuration is required"}
	}
	s := &Server{cfg: cfg, raw: orDiscard(log), raInterval: time.Minute,
		lim: newLimiter(logBurst, logEvery), ready: make(chan struct{}), sem: make(chan struct{}, maxInFlight)}
	for _, o := range opts {
		o(s)
	}
	s.log = slog.New(&limitHandler{h: s.raw.Handler(), lim: s.lim})
	return s, nil
}

// Ready is closed once Serve has bound every socket; it stays open when
// Serve fails to bind (Serve then returns the error).
func (s *Server) Ready() <-chan struct{} { return s.ready }

// sockets are what Serve opens, in the target namespace.
type sockets struct {
	v4         net.PacketConn
	v6         *server6.Server
	ifi        *net.Interface // the bridge, for IPv6
	closeNeigh func()
}

// close closes the sockets, then, once wait has returned (no handler
// runs), the neighbour table handle.
func (k *sockets) close(wait func()) {
	if k.v4 != nil {
		k.v4.Close()
	}
	if k.v6 != nil {
		k.v6.Close()
	}
	wait()
	if k.closeNeigh != nil {
		k.closeNeigh()
	}
}

// Serve binds to the bridge named in the configuration (SO_BINDTODEVICE)
// and answers the VM until ctx ends, then closes every socket, waits for
// requests in flight and returns nil. A DHCPv4 or DHCPv6 socket that
// cannot be opened is a [*BindError] naming the bridge; one failing while
// serving ends Serve with that error. Serve may be called once.
//
// Router advertisements never block or fail Serve: [Server.Ready] is
// closed once the DHCP sockets are bound, and advertisements start when
// the bridge's link-local address appears (the kernel adds it once the
// bridge has a carrier, that is once QEMU opened the tap), learnt from a
// netlink address subscription. Without CAP_NET_RAW they are disabled
// with one warning, and DHCP keeps serving.
func (s *Server) Serve(ctx context.Context) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("dhcp: Serve called twice")
	}
	for _, msg := range s.cfg.Ignored {
		s.raw.Warn("dhcp: ignored input", "interface", s.cfg.Bridge, "what", msg)
	}
	var k sockets
	if err := nsexec.Do(s.netns, func() error { return s.open(&k) }); err != nil {
		k.close(func() {})
		var be *BindError
		if !errors.As(err, &be) {
			err = &BindError{Interface: s.cfg.Bridge, Op: OpEnterNamespace, Err: err}
		}
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("dhcp: interface %q: %s: %w", s.cfg.Bridge, name, err)
				cancel()
			}
		}()
	}

	if k.v4 != nil {
		h4 := NewHandler4(s.cfg, s.log)
		srv4, _ := server4.NewServer("", nil, s.handle4(h4), server4.WithConn(k.v4)) // cannot fail with WithConn
		run("dhcpv4", srv4.Serve)
	}
	if k.v6 != nil {
		run("dhcpv6", k.v6.Serve)
		run("router advertisements", func() error { s.routerAdvertisements(ctx, k.ifi); return nil })
	}
	attrs := []any{"interface", s.cfg.Bridge, "vmMAC", s.cfg.MAC.String()}
	if s.cfg.HasIPv4() {
		attrs = append(attrs, "address", s.cfg.Address.String())
	}
	if s.cfg.IPv6 != nil {
		attrs = append(attrs, "ipv6Address", s.cfg.IPv6.Address.String())
	}
	s.raw.Info("dhcp: serving", attrs...)
	close(s.ready)

	<-ctx.Done()
	k.close(func() {
		wg.Wait()
		for range maxInFlight { // wait for handlers in flight
			s.sem <- struct{}{}
		}
	})
	if p := s.lim.pending(); len(p) > 0 {
		s.raw.LogAttrs(context.Background(), slog.LevelInfo, "dhcp: log lines suppressed by the rate limit",
			slog.String("interface", s.cfg.Bridge), slog.Any("lines", slog.GroupValue(p...)))
	}
	s.raw.Info("dhcp: stopped", "interface", s.cfg.Bridge)
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// open binds the sockets; it runs in the target namespace.
func (s *Server) open(k *sockets) error {
	br := s.cfg.Bridge
	if s.cfg.HasIPv4() {
		conn4, err := listen4(br)
		if err != nil {
			return &BindError{Interface: br, Op: "dhcpv4 udp :67", Err: err, Holder: holder(err, 67, false)}
		}
		k.v4 = conn4
	}
	if s.cfg.IPv6 == nil {
		return nil
	}
	ifi, err := net.InterfaceByName(br)
	if err != nil {
		return &BindError{Interface: br, Op: "dhcpv6: look up bridge", Err: err}
	}
	k.ifi = ifi
	h6 := NewHandler6(s.cfg, ifi.HardwareAddr, s.log)
	neigh, closeNeigh, err := s.neighbors(ifi.Index)
	if err != nil {
		return &BindError{Interface: br, Op: "dhcpv6: neighbour table", Err: err}
	}
	k.closeNeigh = closeNeigh
	h6.SetNeighbors(neigh)
	conn6, err := listen6(ifi)
	if err != nil {
		return &BindError{Interface: br, Op: "dhcpv6 udp [::]:547", Err: err, Holder: holder(err, 547, true)}
	}
	k.v6, _ = server6.NewServer(br, nil, s.handle6(h6), server6.WithConn(conn6)) // cannot fail with WithConn
	return nil
}

// reply writes the reply handle makes (nil: none) to dst, in an
// in-flight slot; without a free slot the packet is dropped.
func (s *Server) reply(conn net.PacketConn, dst net.Addr, proto string, handle func() []byte) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		s.log.Warn("dhcp: dropping requests: too many in flight", "interface", s.cfg.Bridge, "limit", maxInFlight)
		return
	}
	if b := handle(); b != nil {
		if _, err := conn.WriteTo(b, dst); err != nil {
			s.log.Warn(proto+": send reply", "interface", s.cfg.Bridge, "peer", dst.String(), "err", err)
		}
	}
}

func (s *Server) handle4(h *Handler4) server4.Handler {
	// Replies are broadcast: with the bridge binding the VM's address is
	// local to the pod namespace too, so a unicast would stay inside it.
	dst := &net.UDPAddr{IP: net.IPv4bcast, Port: dhcpv4.ClientPort}
	return func(conn net.PacketConn, _ net.Addr, m *dhcpv4.DHCPv4) {
		s.reply(conn, dst, "dhcp", func() []byte {
			if r := h.Handle(m); r != nil {
				return r.ToBytes()
			}
			return nil
		})
	}
}

func (s *Server) handle6(h *Handler6) server6.Handler {
	return func(conn net.PacketConn, peer net.Addr, m dhcpv6.DHCPv6) {
		s.reply(conn, peer, "dhcpv6", func() []byte {
			var from netip.Addr
			if u, ok := peer.(*net.UDPAddr); ok {
				from, _ = netip.AddrFromSlice(u.IP)
				from = from.Unmap()
			}
			if r := h.Handle(from, m); r != nil {
				return r.ToBytes()
			}
			return nil
		})
	}
}
