package kvplugin

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/internal/names"
)

func bridgeRec() *cache.Interface {
	return &cache.Interface{Version: 1, PodInterface: "eth0", Binding: "bridge", Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic",
		MAC: cache.MustParseMAC("0a:58:0a:f4:01:07"), MTU: 1450, IPv4: netip.MustParsePrefix("10.244.1.7/24"), Gateway: netip.MustParseAddr("10.244.1.1"), ServerIPv4: netip.MustParseAddr("169.254.75.10"),
		Routes: []cache.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}, {Dst: netip.MustParsePrefix("10.96.0.0/12"), Gateway: netip.MustParseAddr("10.244.1.254"), Metric: 100}}}
}

func masqRec() *cache.Interface {
	return &cache.Interface{Version: 1, PodInterface: "pod16477688c0e", Binding: "masquerade", Bridge: names.Bridge("pod16477688c0e"), Tap: names.Tap("pod16477688c0e", false),
		MAC: cache.MustParseMAC("02:00:00:a1:b2:c3"), MTU: 1500, Queues: 4, IPv4: netip.MustParsePrefix("10.0.2.2/24"), IPv6: netip.MustParsePrefix("fd10:0:2::2/120"), Gateway: netip.MustParseAddr("10.0.2.1"),
		GatewayIPv6: netip.MustParseAddr("fd10:0:2::1"), ServerIPv4: netip.MustParseAddr("10.0.2.1"), ServerIPv6: netip.MustParseAddr("fe80::1")}
}

// TestRecordRoundTrip: what the CNI plugin encodes is what the sidecar
// decodes, link names derived again from the pod interface.
func TestRecordRoundTrip(t *testing.T) {
	for _, rec := range []*cache.Interface{bridgeRec(), masqRec(),
		{Version: 1, PodInterface: "eth0", Binding: "bridge", Bridge: "k6t-eth0", Tap: "tap0", MAC: cache.MustParseMAC("02:00:00:00:00:01"), MTU: 1500, IPAMDisabled: true}} {
		t.Run(rec.Binding+"/"+rec.PodInterface, func(t *testing.T) {
			s, err := Encode(rec)
			require.NoError(t, err)
			require.LessOrEqual(t, len(s), MaxAlias)
			require.True(t, strings.HasPrefix(s, "virtnet/v1 "))
			got, err := Decode(s, rec.Binding, rec.PodInterface, rec.PodInterface == "eth0")
			require.NoError(t, err)
			require.Equal(t, rec, got)
		})
	}
}

// TestRecordRefused: foreign aliases, other versions, other bindings or
// pod interfaces, and corrupt bodies are refused, each with its sentinel.
func TestRecordRefused(t *testing.T) {
	good, err := Encode(bridgeRec())
	require.NoError(t, err)
	body := strings.TrimPrefix(good, "virtnet/v1 ")
	for _, tc := range []struct {
		name, alias, binding, pod string
		check                     func(error) bool
	}{
		{"empty", "", "bridge", "eth0", func(err error) bool { return errors.Is(err, ErrForeignRecord) }},
		{"someone else's", "uplink to rack 7", "bridge", "eth0", func(err error) bool { return errors.Is(err, ErrForeignRecord) }},
		{"no version", "virtnet/vx " + body, "bridge", "eth0", func(err error) bool { return errors.Is(err, ErrForeignRecord) }},
		{"newer version", "virtnet/v2 " + body, "bridge", "eth0", func(err error) bool {
			return errors.Is(err, ErrRecordVersion) && strings.Contains(err.Error(), "version 2, this build reads 1:")
		}},
		{"other binding", good, "masquerade", "eth0", func(err error) bool {
			return errors.Is(err, ErrRecordMismatch) && strings.Contains(err.Error(), `binding "bridge", expected "masquerade"`)
		}},
		{"other pod interface", good, "bridge", "pod16477688c0e", func(err error) bool {
			return errors.Is(err, ErrRecordMismatch) && strings.Contains(err.Error(), `pod interface "eth0", expected "pod16477688c0e"`)
		}},
		{"not base64", "virtnet/v1 ***", "bridge", "eth0", func(err error) bool { return errors.Is(err, ErrCorrupt) }},
		{"not a record", "virtnet/v1 /////w", "bridge", "eth0", func(err error) bool { return errors.Is(err, ErrCorrupt) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.alias, tc.binding, tc.pod, tc.pod == "eth0")
			require.Error(t, err)
			require.True(t, tc.check(err), "%T %v", err, err)
		})
	}
}

// TestRecordTooLarge: a record that does not fit in an alias is an error
// at ADD time, naming its size; a pod with 6 routes besides the default
// route (each with a gateway and a metric) still fits.
func TestRecordTooLarge(t *testing.T) {
	rec := bridgeRec()
	rec.Routes = nil
	for i := range 6 {
		rec.Routes = append(rec.Routes, cache.Route{Dst: netip.MustParsePrefix("10." + string(rune('0'+i)) + ".0.0/16"), Gateway: netip.MustParseAddr("10.244.1.1"), Metric: 100})
	}
	_, err := Encode(rec)
	require.NoError(t, err, "6 routes fit")
	for i := range 20 {
		rec.Routes = append(rec.Routes, cache.Route{Dst: netip.MustParsePrefix("172.16." + string(rune('0'+i%10)) + ".0/24"), Gateway: netip.MustParseAddr("10.244.1.1"), Metric: 100})
	}
	_, err = Encode(rec)
	require.ErrorIs(t, err, ErrRecordTooLarge)
	require.ErrorContains(t, err, "(26 routes)")
}

// FuzzDecode: no alias makes Decode panic, and whatever it accepts
// encodes again to a record that decodes to the same.
func FuzzDecode(f *testing.F) {
	good, _ := Encode(bridgeRec())
	f.Add(good)
	m, _ := Encode(masqRec())
	f.Add(m)
	f.Add("virtnet/v1 ")
	f.Fuzz(func(t *testing.T, alias string) {
		for _, b := range []string{"bridge", "masquerade"} {
			for _, p := range []string{"eth0", "pod16477688c0e"} {
				rec, err := Decode(alias, b, p, p == "eth0")
				if err != nil {
					continue
				}
				s, err := Encode(rec)
				if err != nil {
					continue // e.g. too large once re-encoded canonically
				}
				again, err := Decode(s, b, p, p == "eth0")
				require.NoError(t, err)
				require.Equal(t, rec, again)
			}
		}
	})
}
