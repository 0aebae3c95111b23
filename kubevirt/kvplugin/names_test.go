package kvplugin

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMethodFor: default names and suffixes map to methods; anything else
// wraps ErrUnknownPlugin.
func TestMethodFor(t *testing.T) {
	for name, want := range map[string]string{
		"virtnet-bridge": "bridge", "virtnet-masquerade": "masquerade", "virtnet-slirp": "slirp",
		"corp-masquerade": "masquerade", "x-bridge": "bridge",
	} {
		got, err := MethodFor(name)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "passt", "-bridge", "virtnet-sriov", "bridge"} {
		_, err := MethodFor(name)
		require.ErrorIs(t, err, ErrUnknownPlugin, name)
	}
}
