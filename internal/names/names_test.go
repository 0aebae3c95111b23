package names

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

func TestLinkNames(t *testing.T) {
	for _, tc := range []struct {
		pod, bridge, tap, nic string
	}{
		{"eth0", "k6t-eth0", "tap0", "eth0-nic"},
		{"net1", "k6t-net1", "tap1", "net1-nic"},
		{"net12", "k6t-net12", "tap12", "net12-nic"},
		{"net1234567", "k6t-net1234567", "tap1234567", "net1234567-nic"},
		{"net123456789", "k6t-" + hash("bridge", "net123456789")[:11], "tap123456789", "nic-" + hash("nic", "net123456789")[:11]},
		{api.HashedPodInterface("blue"), "k6t-" + hash("bridge", api.HashedPodInterface("blue"))[:11],
			"tap" + api.HashedPodInterface("blue")[3:], "nic-" + hash("nic", api.HashedPodInterface("blue"))[:11]},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			require.Equal(t, tc.bridge, Bridge(tc.pod))
			require.Equal(t, tc.tap, Tap(tc.pod))
			require.Equal(t, tc.nic, NIC(tc.pod))
			for _, n := range []string{Bridge(tc.pod), Tap(tc.pod), NIC(tc.pod)} {
				require.NoError(t, CheckLinkName(n))
			}
		})
	}
	require.NotEqual(t, Bridge("pod0123456789a"), Bridge("pod0123456789b"), "short forms differ")
}

func TestCheckLinkName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "a:b", "a\x00b", "a\tb", strings.Repeat("x", 16)} {
		require.Error(t, CheckLinkName(bad), "%q", bad)
	}
	for _, good := range []string{"eth0", "k6t-eth0", strings.Repeat("x", 15), "a.b", "..."} {
		require.NoError(t, CheckLinkName(good), "%q", good)
	}
}

func TestBridgeLinkLocal(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "169.254.75.10/32"}, {9, "169.254.75.19/32"}, {10, "169.254.75.110/32"},
		{63, "169.254.75.163/32"}, {99, "169.254.75.199/32"}, {100, "169.254.76.0/32"},
		{355, "169.254.76.255/32"}, {356, "169.254.77.0/32"},
	} {
		require.Equal(t, tc.want, BridgeLinkLocal(tc.i).String(), "index %d", tc.i)
	}
	seen := map[string]int{}
	for i := range 1000 {
		a := BridgeLinkLocal(i).String()
		j, dup := seen[a]
		require.False(t, dup, "index %d and %d share %s", i, j, a)
		seen[a] = i
	}
}

func TestVMMAC(t *testing.T) {
	a := VMMAC("uid-1", "default")
	require.Equal(t, a, VMMAC("uid-1", "default"), "stable")
	require.NotEqual(t, a, VMMAC("uid-2", "default"))
	require.NotEqual(t, a, VMMAC("uid-1", "other"))
	require.NotEqual(t, a, BridgeMAC("uid-1", "default"))
	for i := range 2000 {
		m := VMMAC("uid", strings.Repeat("i", i%40)+string(rune('a'+i%26)))
		require.Equal(t, byte(2), m[0]&3, "locally administered unicast: %s", m)
		require.NotEqual(t, api.MasqueradeBridgeMAC, m.String())
	}
}

// TestVMMACNeverReserved derives the VM and bridge MACs of 10 000 VMI UIDs
// (and of UIDs whose digest starts with 0xfe, seen with real UIDs before):
// every MAC is unicast, locally administered, never starts with fe: (the
// host side of libvirt's taps) and is never the masquerade bridge's.
func TestVMMACNeverReserved(t *testing.T) {
	tests := []struct {
		name string
		uids []string
	}{
		{"digest starting with fe", []string{"5d2b8f3c-7a1e-4c9b-9f00-000000000003", "5d2b8f3c-7a1e-4c9b-9f00-000000000007"}},
		{"10000 UIDs", func() []string {
			out := make([]string, 10000)
			for i := range out {
				out[i] = fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", i*2654435761%(1<<32), i%65536, i%4096, (i*7)%4096, i*40503)
			}
			return out
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fe := 0
			for _, uid := range tc.uids {
				for _, m := range []net.HardwareAddr{VMMAC(uid, "default"), VMMAC(uid, "net1"), BridgeMAC(uid, "default")} {
					require.Len(t, m, 6)
					require.Equal(t, byte(0x02), m[0]&0x03, "%s: locally administered unicast: %s", uid, m)
					require.NotEqual(t, byte(0xfe), m[0], "%s: %s starts with fe:", uid, m)
					require.NotEqual(t, api.MasqueradeBridgeMAC, m.String())
					if m[0] == 0xfa {
						fe++
					}
				}
			}
			require.NotZero(t, fe, "no UID of the set hit the fe: case")
		})
	}
	require.Equal(t, "fa", VMMAC("5d2b8f3c-7a1e-4c9b-9f00-000000000003", "default").String()[:2])
}

// hash is the hex digest behind a short form.
func hash(kind, pod string) string { return shortForm(kind, "", pod, strings.Repeat("x", 99)) }
