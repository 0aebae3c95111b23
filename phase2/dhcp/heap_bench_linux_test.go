package dhcp

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkServerHeap runs DISCOVER→ACK exchanges over a veth like
// BenchmarkDiscoverAck and reports the process's heap in use after them
// (heap-inuse-B, after a GC; the client lives in the same process) and
// its growth over the timed exchanges (heap-growth-B): a server that keeps
// nothing per exchange stays flat however many exchanges it serves.
func BenchmarkServerHeap(b *testing.B) {
	c := benchClient(b)
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
