package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

// TestRunRefusesBadConfig: an unset or invalid DP_MACVTAP_CONF, or a bad
// flag, exits 2 before anything is served.
func TestRunRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		conf *string
		args []string
	}{
		{"unset", nil, nil},
		{"not JSON", ptr(`[{`), nil},
		{"bad mode", ptr(`[{"name":"eth0","lowerDevice":"eth0","mode":"source"}]`), nil},
		{"unknown flag", ptr(`[]`), []string{"-nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(deviceplugin.ConfigEnv, "")
			if tc.conf != nil {
				t.Setenv(deviceplugin.ConfigEnv, *tc.conf)
			} else {
				require.NoError(t, os.Unsetenv(deviceplugin.ConfigEnv))
			}
			require.Equal(t, 2, run(append(tc.args, "-device-plugin-dir", t.TempDir())))
		})
	}
}

func ptr(s string) *string { return &s }
