//go:build unix

package testutil

import (
	"syscall"
	"testing"
	"time"
)

// ReportCPU starts measuring the process's CPU time (user and system, all
// threads: GC included); the returned function, called after b.Loop's
// loop, reports it as cpu-ns/op. On a machine shared with other jobs a
// benchmark's wall time per op grows with the load, its CPU time much less.
func ReportCPU(b *testing.B) func() {
	b.Helper()
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
