package kvplugin

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/virtnet/virtnet/kubevirt/hookapi/handoff"
)

// TestWireMatchesProtobuf checks the written-out codec of the hand-off
// record against the generated code of handoff.proto: the same bytes as
// the protobuf library's deterministic Marshal, and each side reads what
// the other wrote (unknown fields skipped, as a newer writer's would be).
func TestWireMatchesProtobuf(t *testing.T) {
	v4 := []byte{10, 0, 2, 2}
	v6 := []byte{0xfd, 0x10, 0, 0x2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}
	for _, tc := range []struct {
		name string
		pb   *handoff.Record
	}{
		{"empty", &handoff.Record{}},
		{"bridge layer 2", &handoff.Record{Binding: "bridge", PodInterface: "eth0", Mac: []byte{2, 0, 0, 0, 0, 1}, Mtu: 1500, Queues: 4, IpamDisabled: true}},
		{"masquerade", &handoff.Record{
			Binding: "masquerade", PodInterface: "pod1a2b3c4d5e6", Mac: []byte{2, 0, 0, 0, 0, 2}, Mtu: 65535, Queues: 256,
			Ipv4: &handoff.Prefix{Addr: v4, Bits: 24}, Ipv6: &handoff.Prefix{Addr: v6, Bits: 120},
			Gateway: []byte{10, 0, 2, 1}, GatewayIPv6: v6, ServerIPv4: []byte{10, 0, 2, 1}, ServerIPv6: v6,
			Routes: []*handoff.Route{
				{Dst: &handoff.Prefix{Addr: []byte{169, 254, 1, 1}, Bits: 32}},
				{Dst: &handoff.Prefix{Addr: []byte{0, 0, 0, 0}, Bits: 0}, Gateway: []byte{169, 254, 1, 1}, Metric: 100},
				{},
			},
			Nic: true,
		}},
		{"empty sub-messages", &handoff.Record{Ipv4: &handoff.Prefix{}, Routes: []*handoff.Route{{Dst: &handoff.Prefix{}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(tc.pb)
			require.NoError(t, err)
			var w wireRecord
			require.NoError(t, w.unmarshal(want))
			require.Equal(t, string(want), string(w.marshal()), "the same bytes as the protobuf library")
			var back handoff.Record
			require.NoError(t, proto.Unmarshal(w.marshal(), &back))
			require.True(t, proto.Equal(tc.pb, &back), "protobuf reads what the codec wrote")

			// An unknown field (a newer writer's) is skipped by both.
			withUnknown := append(append([]byte(nil), want...), 0xf8, 0x01, 0x07, 0x9a, 0x01, 0x01, 'x', 0xfd, 0x01, 1, 2, 3, 4)
			var w2 wireRecord
			require.NoError(t, w2.unmarshal(withUnknown))
			require.Equal(t, string(want), string(w2.marshal()))
		})
	}
	for _, bad := range [][]byte{{0x0a, 0x05, 'a'}, {0x20}, {0x00}, {0x0b}} {
		var w wireRecord
		require.Error(t, w.unmarshal(bad), "%x", bad)
		require.Error(t, proto.Unmarshal(bad, &handoff.Record{}), "%x (protobuf agrees)", bad)
	}
}
