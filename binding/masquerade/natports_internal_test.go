package masquerade

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/netdriver"
)

// TestNATPortsOnce: a port declared twice (KubeVirt v0.53 and api.Validate
// accept it) is one DNAT entry; TCP and UDP of one port are two.
func TestNATPortsOnce(t *testing.T) {
	tests := []struct {
		name  string
		ports []api.Port
		want  []netdriver.NATPort
	}{
		{"none", nil, nil},
		{"twice", []api.Port{{Port: 80, Protocol: "TCP"}, {Port: 443, Protocol: "TCP"}, {Port: 80, Protocol: "TCP"}},
			[]netdriver.NATPort{{Protocol: "tcp", Port: 80}, {Protocol: "tcp", Port: 443}}},
		{"both protocols", []api.Port{{Port: 53, Protocol: "UDP"}, {Port: 53, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}},
			[]netdriver.NATPort{{Protocol: "udp", Port: 53}, {Protocol: "tcp", Port: 53}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, natPorts(tc.ports))
		})
	}
}
