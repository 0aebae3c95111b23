package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// BenchmarkDecodeRender is what a virt-launcher pays per start for the
// example: decode, default and validate the embedded VMI, read its phase1
// records, build and marshal the domain XML. The records are copied to a
// directory once, outside the timing.
func BenchmarkDecodeRender(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, copyEmbedded(dir))
	store, err := cache.New(dir)
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	defer testutil.ReportCPU(b)()
	for b.Loop() {
		vmi, err := loadVMI("")
		require.NoError(b, err)
		dom, err := phase2.Domain(ctx, vmi, store, phase2.Options{})
		require.NoError(b, err)
		_, err = dom.Marshal()
		require.NoError(b, err)
	}
}
