package phase2_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
)

// TestInvalidRecordValues: a record whose values phase1 cannot have
// written (damaged or forged) is refused with ErrInvalidRecord naming
// the record field and value, before anything is rendered; it never reaches
// the domain XML.
func TestInvalidRecordValues(t *testing.T) {
	vmi := loadVMI(t, "bridge")
	type fields = map[string]any
	tests := []struct {
		name         string
		edit         fields
		field, value string
	}{
		{"MAC zz", fields{"mac": "zz"}, "mac", "zz"},
		{"EUI-64 MAC", fields{"mac": "02:00:00:00:00:00:00:01"}, "mac", "02:00:00:00:00:00:00:01"},
		{"multicast MAC", fields{"mac": "01:00:5e:00:00:01"}, "mac", "01:00:5e:00:00:01"},
		{"zero MAC", fields{"mac": "00:00:00:00:00:00"}, "mac", "00:00:00:00:00:00"},
		{"MAC with XML", fields{"mac": "'/><x y='"}, "mac", "'/><x y='"},
		{"MTU 0x10000", fields{"mtu": 65536}, "mtu", "65536"},
		{"MTU 67", fields{"mtu": 67}, "mtu", "67"},
		{"bridge name too long", fields{"bridge": "k6t-0123456789ab"}, "bridge", "k6t-0123456789ab"},
		{"tap name with a slash", fields{"tap": "../tap0"}, "tap", "../tap0"},
		{"nic name with a space", fields{"nic": "eth0 nic"}, "nic", "eth0 nic"},
		{"negative ifindex", fields{"ifindex": -3}, "ifindex", "-3"},
		{"queues 257", fields{"queues": 257}, "queues", "257"},
		{"IPv4 without prefix", fields{"ipv4": "172.16.0.24"}, "ipv4", "172.16.0.24"},
		{"IPv6 in ipv4", fields{"ipv4": "fd00::2/64"}, "ipv4", "fd00::2/64"},
		{"IPv4 in ipv6", fields{"ipv6": "::ffff:10.0.0.1/120"}, "ipv6", "::ffff:10.0.0.1/120"},
		{"gateway not an address", fields{"gateway": "router"}, "gateway", "router"},
		{"IPv6 server identifier", fields{"serverIPv4": "fe80::1"}, "serverIPv4", "fe80::1"},
		{"IPv4 IPv6 gateway", fields{"gatewayIPv6": "10.0.0.1"}, "gatewayIPv6", "10.0.0.1"},
		{"route dst", fields{"routes": []fields{{"dst": "10.1.0.0/16", "gateway": "172.16.0.1"}, {"dst": "default"}}},
			"routes[1].dst", "default"},
		{"route gateway of another family", fields{"routes": []fields{{"dst": "10.1.0.0/16", "gateway": "fe80::1"}}}, "routes[0].gateway", "fe80::1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := writeRecords(t, vmi.Metadata.UID, sourceDocRecord)
			editRecord(t, store, vmi.Metadata.UID, "bridge", tc.edit)
			dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{})
			require.Nil(t, dom)
			require.ErrorIs(t, err, phase2.ErrInvalidRecord)
			require.ErrorContains(t, err, `interface "bridge"`)
			require.ErrorContains(t, err, fmt.Sprintf("interface-bridge.json: %s %q: ", tc.field, tc.value))
		})
	}
	t.Run("the source document's record passes", func(t *testing.T) {
		_, err := phase2.Domain(context.Background(), vmi, writeRecords(t, vmi.Metadata.UID, sourceDocRecord), phase2.Options{})
		require.NoError(t, err)
	})
}

// editRecord sets fields of the interface record of iface on disk, as a
// damaged or forged file would have them (values the record's types
// refuse included).
func editRecord(t *testing.T, store *cache.Store, uid, iface string, edit map[string]any) {
	t.Helper()
	path, err := store.InterfacePath(uid, iface)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	maps.Copy(m, edit)
	b, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}
