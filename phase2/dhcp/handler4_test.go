package dhcp

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4"
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
		r.Routes = []cache.Route{{Dst: "0.0.0.0/0", Gateway: "10.244.1.1"}, {Dst: "10.244.1.0/24"}, {Dst: "172.16.0.0/12", Gateway: "10.244.1.254"}}
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

func TestHandler4ForeignLogBounded(t *testing.T) {
	var logs bytes.Buffer
	h := NewHandler4(bridgeConfig(t, nil, nil), slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 3 * maxForeignLogged {
		for range 2 {
			require.Nil(t, h.Handle(discover(t, net.HardwareAddr{2, 0, 0, 0, byte(i >> 8), byte(i)}.String())))
		}
	}
	require.Equal(t, maxForeignLogged+1, strings.Count(logs.String(), "\n"))
	require.Len(t, h.foreign, maxForeignLogged)
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
		r.Routes = []cache.Route{{Dst: "0.0.0.0/0", Gateway: "10.244.1.1"}, {Dst: "10.244.1.0/24"}}
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
