package kernel_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/virtnet/virtnet/netdriver/kernel"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// BenchmarkApplyNAT times ApplyNAT in a fresh namespace, on a driver that
// has already listed the table (phase1's order: NATRules, then ApplyNAT),
// and reports kernel-ns/op, the part spent inside the batch's sendmsg
// (the kernel's own cost of the transaction, commit included), and
// overhead-x, the ratio of the two.
func BenchmarkApplyNAT(b *testing.B) {
	testutil.RequireRoot(b)
	ports := func(n int) []netdriver.NATPort {
		out := make([]netdriver.NATPort, n)
		for i := range out {
			out[i] = netdriver.NATPort{Protocol: "tcp", Port: uint16(1 + i)}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		nat  netdriver.NAT
	}{
		{"ipv4 1 port", netdrivertest.SampleNAT4(ports(1)...)},
		{"ipv6 1 port", netdrivertest.SampleNAT6(ports(1)...)},
		{"ipv4 1000 ports", netdrivertest.SampleNAT4(ports(1000)...)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var total, inKernel time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				ns := testutil.NewNS(b, fmt.Sprintf("vn-bn%d", i%100))
				d, err := kernel.Open(ns.Path)
				require.NoError(b, err)
				_, err = d.NATRules(tc.nat.Family)
				require.NoError(b, err)
				b.StartTimer()
				start := time.Now()
				err = d.ApplyNAT(tc.nat)
				total += time.Since(start)
				b.StopTimer()
				require.NoError(b, err)
				inKernel += d.NATKernelTime()
				require.NoError(b, d.Close())
				b.StartTimer()
			}
			b.ReportMetric(float64(inKernel.Nanoseconds())/float64(b.N), "kernel-ns/op")
			b.ReportMetric(float64(total)/float64(inKernel), "overhead-x")
		})
	}
}
