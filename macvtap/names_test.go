package macvtap

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeBridge, "bridge": ModeBridge, "vepa": ModeVEPA, "private": ModePrivate, "passthru": ModePassthru} {
		got, err := ParseMode(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"source", "BRIDGE", " bridge", "passthrough"} {
		_, err := ParseMode(bad)
		require.ErrorIs(t, err, ErrUnknownMode, bad)
	}
}

func TestNames(t *testing.T) {
	require.Equal(t, "macvtap.network.kubevirt.io/eno1", ResourceName("eno1"))
	require.Equal(t, "eth0Mvp3", DeviceID("eth0", 3))

	long := "a-very-long-device-id-that-would-overflow-ifname"
	h := HostLinkName(long)
	require.Equal(t, h, HostLinkName(long), "deterministic")
	require.Regexp(t, `^mvt[0-9a-f]{12}$`, h)
	require.NoError(t, ValidIfName(h))
	require.NotEqual(t, h, HostLinkName(long+"x"))

	require.Equal(t, []string{"eth0Mvp3", HostLinkName("eth0Mvp3")}, HostLinkCandidates("eth0Mvp3"))
	require.Equal(t, []string{HostLinkName(long)}, HostLinkCandidates(long))
}

func TestValidIfName(t *testing.T) {
	for _, ok := range []string{"eth0", "p4p1", "a", strings.Repeat("x", 15), "net1-nic", "eth0.100"} {
		require.NoError(t, ValidIfName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", strings.Repeat("x", 16), "a/b", "eth0:1", "a b", "a\tb"} {
		require.Error(t, ValidIfName(bad), bad)
	}
}
