package phase2_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
)

// TestInvalidRecordValues: a record whose values phase1 cannot have
// written (damaged or forged) is refused with an InvalidRecordError naming
// the record field and value, before anything is rendered; it never reaches
// the domain XML.
func TestInvalidRecordValues(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	tests := []struct {
		name         string
		edit         func(*cache.Interface)
		field, value string
	}{
		{"MAC zz", func(r *cache.Interface) { r.MAC = cache.MustParseMAC("zz") }, "mac", "zz"},
		{"EUI-64 MAC", func(r *cache.Interface) { r.MAC = cache.MustParseMAC("02:00:00:00:00:00:00:01") }, "mac", "02:00:00:00:00:00:00:01"},
		{"multicast MAC", func(r *cache.Interface) { r.MAC = cache.MustParseMAC("01:00:5e:00:00:01") }, "mac", "01:00:5e:00:00:01"},
		{"zero MAC", func(r *cache.Interface) { r.MAC = cache.MustParseMAC("00:00:00:00:00:00") }, "mac", "00:00:00:00:00:00"},
		{"MAC with XML", func(r *cache.Interface) { r.MAC = cache.MustParseMAC("'/><x y='") }, "mac", "'/><x y='"},
		{"MTU 0x10000", func(r *cache.Interface) { r.MTU = 65536 }, "mtu", "65536"},
		{"MTU 67", func(r *cache.Interface) { r.MTU = 67 }, "mtu", "67"},
		{"bridge name too long", func(r *cache.Interface) { r.Bridge = "k6t-0123456789ab" }, "bridge", "k6t-0123456789ab"},
		{"tap name with a slash", func(r *cache.Interface) { r.Tap = "../tap0" }, "tap", "../tap0"},
		{"nic name with a space", func(r *cache.Interface) { r.NIC = "eth0 nic" }, "nic", "eth0 nic"},
		{"negative ifindex", func(r *cache.Interface) { r.Ifindex = -3 }, "ifindex", "-3"},
		{"queues 257", func(r *cache.Interface) { r.Queues = 257 }, "queues", "257"},
		{"IPv4 without prefix", func(r *cache.Interface) { r.IPv4 = netip.MustParsePrefix("172.16.0.24") }, "ipv4", "172.16.0.24"},
		{"IPv6 in ipv4", func(r *cache.Interface) { r.IPv4 = netip.MustParsePrefix("fd00::2/64") }, "ipv4", "fd00::2/64"},
		{"IPv4 in ipv6", func(r *cache.Interface) { r.IPv6 = netip.MustParsePrefix("::ffff:10.0.0.1/120") }, "ipv6", "::ffff:10.0.0.1/120"},
		{"gateway not an address", func(r *cache.Interface) { r.Gateway = netip.MustParseAddr("router") }, "gateway", "router"},
		{"IPv6 server identifier", func(r *cache.Interface) { r.ServerIPv4 = netip.MustParseAddr("fe80::1") }, "serverIPv4", "fe80::1"},
		{"IPv4 IPv6 gateway", func(r *cache.Interface) { r.GatewayIPv6 = netip.MustParseAddr("10.0.0.1") }, "gatewayIPv6", "10.0.0.1"},
		{"route dst", func(r *cache.Interface) {
			r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("10.1.0.0/16"), Gateway: netip.MustParseAddr("172.16.0.1")}, {Dst: netip.MustParsePrefix("default")}}
		}, "routes[1].dst", "default"},
		{"route gateway of another family", func(r *cache.Interface) {
			r.Routes = []cache.Route{{Dst: netip.MustParsePrefix("10.1.0.0/16"), Gateway: netip.MustParseAddr("fe80::1")}}
		}, "routes[0].gateway", "fe80::1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := sourceDocRecord
			tc.edit(&rec)
			store := writeRecords(t, vmi.Metadata.UID, rec)
			dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{})
			require.Nil(t, dom)
			var ie *phase2.InvalidRecordError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, "bridge", ie.Interface)
			require.Equal(t, tc.field, ie.Field)
			require.Equal(t, tc.value, ie.Value)
			require.Contains(t, ie.Path, "interface-bridge.json")
		})
	}
	t.Run("the source document's record passes", func(t *testing.T) {
		_, err := phase2.Domain(context.Background(), vmi, writeRecords(t, vmi.Metadata.UID, sourceDocRecord), phase2.Options{})
		require.NoError(t, err)
	})
}
