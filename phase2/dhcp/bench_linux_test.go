package dhcp

import (
	"context"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/stretchr/testify/require"
)

// BenchmarkDiscoverAck measures one full DISCOVER→OFFER→REQUEST→ACK
// exchange over a veth and the pod's bridge, with insomniacslk's nclient4
// (a raw packet socket) in the VM namespace.
func BenchmarkDiscoverAck(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		lease, err := c.Request(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got := lease.ACK.YourIPAddr.String(); got != "10.244.1.7" {
			b.Fatalf("ACK for %s", got)
		}
	}
}

// benchClient serves the bridge record in a lab and returns an nclient4
// client in the VM's namespace, with the VM's MAC.
func benchClient(b *testing.B) *nclient4.Client {
	l := newLab(b, []string{"169.254.75.10/32"}, "02:42:ac:10:00:18")
	cfg, err := NewConfig(testVMI(), nil, bridgeRecord(), []byte(podResolvConf))
	require.NoError(b, err)
	s, err := NewServer(cfg, discardLogger(), WithNetNS(l.pod.Path))
	require.NoError(b, err)
	serve(b, s)
	var c *nclient4.Client
	require.NoError(b, l.clients[0].Do(func() (err error) {
		c, err = nclient4.New("eth0")
		return err
	}))
	b.Cleanup(func() { c.Close() })
	return c
}
