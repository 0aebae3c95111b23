package dhcp

import (
	"context"
	"runtime"
	"testing"

	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/stretchr/testify/require"
)

// BenchmarkServerHeap runs DISCOVER→ACK exchanges over a veth like
// BenchmarkDiscoverAck and reports the process's heap in use after them
// (heap-inuse-B, after a GC; the client lives in the same process) and
// its growth over the timed exchanges (heap-growth-B): a server that keeps
// nothing per exchange stays flat however many exchanges it serves.
func BenchmarkServerHeap(b *testing.B) {
	vmMAC := "02:42:ac:10:00:18"
	l := newLab(b, []string{"169.254.75.10/32"}, vmMAC)
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
	ctx := context.Background()
	exchange := func() {
		if _, err := c.Request(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for range 50 { // warm up: lazily allocated buffers and pools
		exchange()
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	n := 0
	for b.Loop() {
		exchange()
		n++
	}
	b.StopTimer()
	after := heap()
	b.ReportMetric(float64(after), "heap-inuse-B")
	b.ReportMetric(float64(int64(after)-int64(before)), "heap-growth-B")
	b.ReportMetric(float64(n), "exchanges")
}
