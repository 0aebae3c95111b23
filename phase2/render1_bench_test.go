package phase2_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
)

// BenchmarkRender1 is BenchmarkRender64 with one (masquerade) interface:
// the fixed cost of a domain.
func BenchmarkRender1(b *testing.B) {
	vmi, store := wideVMI(b, 1)
	items, err := phase2.ReadRecords(context.Background(), vmi, store, phase2.Options{})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		dom, err := domxml.Build(vmi, domxml.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := phase2.Render(vmi, items, dom, binding.RenderOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := dom.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
}
