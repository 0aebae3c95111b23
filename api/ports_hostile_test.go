package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// TestPortsHostile: port lists at and beyond the edges of the port range
// and overlapping declarations. Each bad entry is an error naming its
// field path; valid edges load.
func TestPortsHostile(t *testing.T) {
	const p = "spec.domain.devices.interfaces[0].ports"
	tests := []struct {
		name    string
		binding string
		ports   string
		bad     []string // field paths, in order; none: valid
		// decodeErr: the value does not even decode (beyond int32).
		decodeErr bool
	}{
		{"65535 is the last port", "masquerade", `[{port: 65535}, {port: 1, protocol: UDP}]`, nil, false},
		{"65536", "masquerade", `[{port: 65536}]`, []string{p + "[0].port"}, false},
		{"negative", "passt", `[{port: -1}]`, []string{p + "[0].port"}, false},
		{name: "beyond int32", binding: "slirp", ports: `[{port: 4294967377}]`, decodeErr: true},
		{"same port TCP and UDP is fine", "masquerade", `[{port: 53}, {port: 53, protocol: UDP}]`, nil, false},
		{"duplicate UDP on passt is one forward", "passt", `[{port: 53, protocol: UDP}, {port: 53, protocol: UDP}]`, nil, false},
		{"duplicate UDP on slirp (QEMU binds twice)", "slirp", `[{port: 53, protocol: UDP}, {port: 53, protocol: UDP}]`, []string{p + "[1].port"}, false},
		{"duplicate with default protocol", "slirp", `[{port: 22, protocol: TCP}, {port: 22}]`, []string{p + "[1].port"}, false},
		{"every port listed twice on masquerade (as v0.53)", "masquerade", `[{port: 80}, {port: 443}, {port: 80}, {port: 443}]`, nil, false},
		{"every port listed twice on slirp", "slirp", `[{port: 80}, {port: 443}, {port: 80}, {port: 443}]`, []string{p + "[2].port", p + "[3].port"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := fmt.Sprintf(`
kind: VirtualMachineInstance
metadata: {name: ports, namespace: default, uid: 11111111-2222-4333-8444-555555555555}
spec:
  domain: {devices: {interfaces: [{name: default, %s: {}, ports: %s}]}}
  networks: [{name: default, pod: {}}]
`, tt.binding, tt.ports)
			_, err := api.Load([]byte(yaml))
			if tt.decodeErr {
				require.Error(t, err, "a port beyond int32 must not load, nor wrap into range")
				return
			}
			if tt.bad == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, api.ErrInvalid)
			var got []string
			for _, fe := range api.FieldErrors(err) {
				got = append(got, fe.Path)
			}
			require.Equal(t, tt.bad, got, "%v", err)
		})
	}
}
