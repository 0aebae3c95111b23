package dhcp

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv6"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
)

func bridgeConfig(t testing.TB, mut func(*cache.Interface), iface *api.Interface) *Config {
	t.Helper()
	rec := bridgeRecord()
	if mut != nil {
		mut(rec)
	}
	c, err := NewConfig(testVMI(), iface, rec, []byte(podResolvConf))
	require.NoError(t, err)
	return c
}

func TestOptions4Encoding(t *testing.T) {
	routes := func(r *cache.Interface) {
		r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}, {Dst: netip.MustParsePrefix("10.244.1.0/24")}, {Dst: netip.MustParsePrefix("172.16.0.0/12"), Gateway: netip.MustParseAddr("10.244.1.254")}}
	}
	opts := &api.Interface{DHCPOptions: &api.DHCPOptions{PrivateOptions: []api.DHCPPrivateOption{{Option: 224, Value: "hello"}},
		BootFileName: "boot.ipxe", TFTPServerName: "tftp", NTPServers: []string{"10.0.0.5"}}}
	c := bridgeConfig(t, routes, opts)
	got := dhcpv4.OptionsFromList(Options4(c)...)
	for _, tc := range []struct {
		name string
		code uint8
		want []byte
	}{
		{"subnet mask", 1, []byte{255, 255, 255, 0}},
		{"router", 3, []byte{10, 244, 1, 1}},
		{"dns", 6, []byte{10, 96, 0, 10}},
		{"hostname", 12, []byte("testvmi")},
		{"domain name", 15, []byte("default.svc.cluster.local")},
		{"mtu", 26, []byte{0x05, 0xa0}},
		{"ntp", 42, []byte{10, 0, 0, 5}},
		{"lease 999 days", 51, []byte{0x05, 0x25, 0x0a, 0x80}}, // 86313600 s
		{"server id", 54, []byte{169, 254, 75, 10}},
		{"tftp", 66, []byte("tftp")},
		{"boot file", 67, []byte("boot.ipxe")},
		{"search (RFC 1035 labels)", 119, []byte("\x07default\x03svc\x07cluster\x05local\x00\x03svc\x07cluster\x05local\x00\x07cluster\x05local\x00")},
		// RFC 3442: width, significant octets, router; default route last.
		{"classless routes", 121, []byte{24, 10, 244, 1, 0, 0, 0, 0, 12, 172, 16, 10, 244, 1, 254, 0, 10, 244, 1, 1}},
		{"private 224", 224, []byte("hello")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, got.Get(dhcpv4.GenericOptionCode(tc.code)))
		})
	}
	require.Len(t, got, 14)
}

func discover(t testing.TB, mac string) *dhcpv4.DHCPv4 {
	t.Helper()
	hw, err := net.ParseMAC(mac)
	require.NoError(t, err)
	d, err := dhcpv4.NewDiscovery(hw)
	require.NoError(t, err)
	return d
}

func TestHandler4(t *testing.T) {
	vmMAC := "02:42:ac:10:00:18"
	c := bridgeConfig(t, nil, nil)
	var logs bytes.Buffer
	h := NewHandler4(c, slog.New(slog.NewTextHandler(&logs, nil)))
	offer := h.Handle(discover(t, vmMAC))
	req, err := dhcpv4.NewRequestFromOffer(offer)
	require.NoError(t, err)
	withIP := func(ip string) *dhcpv4.DHCPv4 {
		r, err := dhcpv4.NewRequestFromOffer(offer)
		require.NoError(t, err)
		r.UpdateOption(dhcpv4.OptRequestedIPAddress(net.ParseIP(ip)))
		return r
	}
	renew := func() *dhcpv4.DHCPv4 {
		r, err := dhcpv4.NewRequestFromOffer(offer)
		require.NoError(t, err)
		r.Options.Del(dhcpv4.OptionRequestedIPAddress)
		r.Options.Del(dhcpv4.OptionServerIdentifier)
		r.ClientIPAddr = net.ParseIP("10.244.1.7").To4()
		return r
	}
	otherServer := withIP("10.244.1.7")
	otherServer.UpdateOption(dhcpv4.OptServerIdentifier(net.ParseIP("10.9.9.9")))
	release, err := dhcpv4.NewReleaseFromACK(offer)
	require.NoError(t, err)
	relayed := discover(t, vmMAC)
	relayed.GatewayIPAddr = net.ParseIP("10.1.1.1")
	reply := discover(t, vmMAC)
	reply.OpCode = dhcpv4.OpcodeBootReply

	for _, tc := range []struct {
		name string
		req  *dhcpv4.DHCPv4
		want dhcpv4.MessageType // MessageTypeNone: no reply
	}{
		{"discover", discover(t, vmMAC), dhcpv4.MessageTypeOffer},
		{"request", req, dhcpv4.MessageTypeAck},
		{"renew with ciaddr", renew(), dhcpv4.MessageTypeAck},
		{"request other address", withIP("10.244.1.8"), dhcpv4.MessageTypeNak},
		{"request for other server", otherServer, dhcpv4.MessageTypeNone},
		{"foreign mac", discover(t, "02:00:00:00:00:99"), dhcpv4.MessageTypeNone},
		{"release", release, dhcpv4.MessageTypeNone},
		{"relayed", relayed, dhcpv4.MessageTypeNone},
		{"bootreply", reply, dhcpv4.MessageTypeNone},
		{"nil", nil, dhcpv4.MessageTypeNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.Handle(tc.req)
			if tc.want == dhcpv4.MessageTypeNone {
				require.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			require.Equal(t, tc.want, r.MessageType())
			require.Equal(t, tc.req.TransactionID, r.TransactionID)
			require.Equal(t, dhcpv4.OpcodeBootReply, r.OpCode)
			require.Equal(t, "169.254.75.10", r.ServerIdentifier().String())
			// The reply survives a round trip through the wire format.
			back, err := dhcpv4.FromBytes(r.ToBytes())
			require.NoError(t, err)
			require.Equal(t, tc.want, back.MessageType())
			if tc.want == dhcpv4.MessageTypeNak {
				require.True(t, r.YourIPAddr.IsUnspecified())
				require.Nil(t, r.Options.Get(dhcpv4.OptionIPAddressLeaseTime))
				return
			}
			require.Equal(t, "10.244.1.7", r.YourIPAddr.String())
			require.Equal(t, InfiniteLease, r.IPAddressLeaseTime(0))
		})
	}
	require.Equal(t, 1, strings.Count(logs.String(), "02:00:00:00:00:99"))
}

// fakeClock replaces the clock of the rate limit behind log (a logger
// the handlers made with limited) and returns a function advancing it.
func fakeClock(t *testing.T, log *slog.Logger) func(time.Duration) {
	t.Helper()
	lh, ok := log.Handler().(*limitHandler)
	require.True(t, ok, "logger is not rate-limited")
	now := time.Unix(1e9, 0)
	lh.lim.now = func() time.Time { return now }
	return func(d time.Duration) { now = now.Add(d) }
}

// TestHandler4ForeignLogBounded: foreign MACs are logged once each, for
// at most maxForeignLogged MACs, and within the rate limit.
func TestHandler4ForeignLogBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		gap  time.Duration // clock advance between packets
		want int
	}{
		{"flood at one instant: the rate limit", 0, logBurst + 1},
		{"slow trickle: the MAC set bound", time.Hour, maxForeignLogged + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := NewHandler4(bridgeConfig(t, nil, nil), slog.New(slog.NewTextHandler(&logs, nil)))
			advance := fakeClock(t, h.log)
			for i := range 3 * maxForeignLogged {
				for range 2 {
					require.Nil(t, h.Handle(discover(t, net.HardwareAddr{2, 0, 0, 0, byte(i >> 8), byte(i)}.String())))
					advance(tc.gap)
				}
			}
			require.Equal(t, tc.want, strings.Count(logs.String(), "\n"), logs.String())
			require.Len(t, h.foreign.seen, maxForeignLogged)
		})
	}
}

// TestHandler4NAKLogRateLimit: a flood of REQUESTs for a wrong address
// with the VM's MAC gets a NAK each but costs logBurst lines, then one per
// logEvery that says how many were left out.
func TestHandler4NAKLogRateLimit(t *testing.T) {
	var logs bytes.Buffer
	h := NewHandler4(bridgeConfig(t, nil, nil), slog.New(slog.NewTextHandler(&logs, nil)))
	advance := fakeClock(t, h.log)
	offer := h.Handle(discover(t, "02:42:ac:10:00:18"))
	req, err := dhcpv4.NewRequestFromOffer(offer)
	require.NoError(t, err)
	req.UpdateOption(dhcpv4.OptRequestedIPAddress(net.ParseIP("10.244.1.99")))
	const flood = 10000
	for range flood {
		r := h.Handle(req)
		require.Equal(t, dhcpv4.MessageTypeNak, r.MessageType())
	}
	require.Equal(t, logBurst, strings.Count(logs.String(), "NAK"))
	advance(logEvery)
	h.Handle(req)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, logBurst+1)
	require.Contains(t, lines[logBurst], fmt.Sprintf("suppressed=%d", flood-logBurst))
}

func TestHandler4AnyMAC(t *testing.T) {
	c, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(t, err)
	h := NewHandler4(c, slog.New(slog.DiscardHandler))
	r := h.Handle(discover(t, "52:54:00:12:34:56"))
	require.NotNil(t, r)
	require.Equal(t, "10.0.2.2", r.YourIPAddr.String())
	require.Equal(t, []net.IP{net.ParseIP("10.0.2.1").To4()}, r.Router())
}

// FuzzHandle feeds arbitrary bytes through parsing, the handler and
// encoding of the reply: no input may panic, and every reply must parse.
func FuzzHandle(f *testing.F) {
	h := NewHandler4(bridgeConfig(f, func(r *cache.Interface) {
		r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}, {Dst: netip.MustParsePrefix("10.244.1.0/24")}}
	}, nil), slog.New(slog.DiscardHandler))
	d := discover(f, "02:42:ac:10:00:18")
	f.Add(d.ToBytes())
	offer := h.Handle(d)
	req, _ := dhcpv4.NewRequestFromOffer(offer)
	f.Add(req.ToBytes())
	f.Add(discover(f, "02:00:00:00:00:01").ToBytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := dhcpv4.FromBytes(b)
		if err != nil {
			return
		}
		r := h.Handle(m)
		if r == nil {
			return
		}
		if _, err := dhcpv4.FromBytes(r.ToBytes()); err != nil {
			t.Fatalf("reply does not parse: %v", err)
		}
	})
}

func BenchmarkHandler4(b *testing.B) {
	h := NewHandler4(bridgeConfig(b, nil, nil), slog.New(slog.DiscardHandler))
	d := discover(b, "02:42:ac:10:00:18")
	raw := d.ToBytes()
	b.ReportAllocs()
	for b.Loop() {
		m, err := dhcpv4.FromBytes(raw)
		if err != nil {
			b.Fatal(err)
		}
		if r := h.Handle(m); r == nil {
			b.Fatal("no offer")
		} else {
			_ = r.ToBytes()
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestHandler4MaxMessageSize: a reply never exceeds the client's maximum
// message size (option 57, 576 when absent or lower, the MTU at most):
// optional options are left out, least important and unrequested first,
// and the lease itself (mask, router, lease time, server id) always stays.
func TestHandler4MaxMessageSize(t *testing.T) {
	big := strings.Repeat("x", 255)
	iface := &api.Interface{DHCPOptions: &api.DHCPOptions{
		BootFileName: "pxelinux.0", TFTPServerName: "tftp.example.org", NTPServers: []string{"10.0.0.5"},
		PrivateOptions: []api.DHCPPrivateOption{{Option: 240, Value: big}, {Option: 241, Value: big}, {Option: 242, Value: "small"}},
	}}
	codes := func(r *dhcpv4.DHCPv4) []int {
		var out []int
		for c := range r.Options {
			out = append(out, int(c))
		}
		slices.Sort(out)
		return out
	}
	all := []int{1, 3, 6, 12, 15, 26, 42, 51, 53, 54, 66, 67, 119, 240, 241, 242}
	for _, tc := range []struct {
		name      string
		maxSize   int // option 57; 0: absent
		mtu       int
		requested []uint8
		want      []int
		dropped   string
	}{
		{"no option 57: 576", 0, 1440, nil, []int{1, 3, 6, 12, 15, 26, 42, 51, 53, 54, 66, 67, 119, 242}, "dropped=\"[240 241]\""},
		{"option 57 below 576 counts as 576", 300, 1440, nil, []int{1, 3, 6, 12, 15, 26, 42, 51, 53, 54, 66, 67, 119, 242}, "[240 241]"},
		{"requested private option kept first", 576, 1440, []uint8{1, 3, 241}, []int{1, 3, 6, 12, 26, 51, 53, 54, 241}, "[119 15 42 66 67 240 242]"},
		{"option 57 of 1500: everything", 1500, 1500, nil, all, ""},
		{"the MTU caps option 57", 1500, 800, nil, []int{1, 3, 6, 12, 15, 26, 42, 51, 53, 54, 66, 67, 119, 240, 242}, "[241]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bridgeConfig(t, func(r *cache.Interface) { r.MTU = tc.mtu }, iface)
			var logs bytes.Buffer
			h := NewHandler4(c, slog.New(slog.NewTextHandler(&logs, nil)))
			d := discover(t, "02:42:ac:10:00:18")
			if tc.maxSize != 0 {
				d.UpdateOption(dhcpv4.OptMaxMessageSize(uint16(tc.maxSize)))
			}
			if tc.requested != nil {
				var pr dhcpv4.OptionCodeList
				for _, c := range tc.requested {
					pr.Add(dhcpv4.GenericOptionCode(c))
				}
				d.UpdateOption(dhcpv4.OptParameterRequestList(pr...))
			}
			r := h.Handle(d)
			require.NotNil(t, r)
			require.Equal(t, tc.want, codes(r))
			limit := max(tc.maxSize, 576)
			if tc.mtu >= 576 {
				limit = min(limit, tc.mtu)
			}
			require.LessOrEqual(t, len(r.ToBytes())+ipUDPHeaders, limit)
			if tc.dropped == "" {
				require.NotContains(t, logs.String(), "left out")
			} else {
				require.Contains(t, logs.String(), "left out to fit")
				require.Contains(t, logs.String(), tc.dropped)
			}
		})
	}
}

// TestNilLogger: every constructor taking a logger treats nil as "discard".
func TestNilLogger(t *testing.T) {
	c := bridgeConfig(t, nil, nil)
	h4 := NewHandler4(c, nil)
	offer := h4.Handle(discover(t, "02:42:ac:10:00:18"))
	require.NotNil(t, offer)
	req, err := dhcpv4.NewRequestFromOffer(offer)
	require.NoError(t, err)
	req.UpdateOption(dhcpv4.OptRequestedIPAddress(net.ParseIP("10.244.1.99")))
	require.Equal(t, dhcpv4.MessageTypeNak, h4.Handle(req).MessageType()) // logs at Info
	require.Nil(t, h4.Handle(discover(t, "02:00:00:00:00:99")))           // logs at Warn

	m, err := NewConfig(testVMI(), nil, masqRecord(), nil)
	require.NoError(t, err)
	h6 := NewHandler6(m, net.HardwareAddr{2, 0, 0, 0, 0, 1}, nil)
	sol, err := dhcpv6.NewSolicit(net.HardwareAddr{2, 1, 2, 3, 4, 5})
	require.NoError(t, err)
	require.NotNil(t, h6.Handle(netip.MustParseAddr("fe80::1"), sol))

	s, err := NewServer(c, nil)
	require.NoError(t, err)
	require.NotNil(t, s)
}
