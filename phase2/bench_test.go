package phase2_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// wideVMI has a masquerade interface on the pod network and n-1 bridge
// interfaces on Multus networks, with their records in a new store.
func wideVMI(tb testing.TB, n int) (*api.VMI, *cache.Store) {
	tb.Helper()
	var ifaces, nets strings.Builder
	ifaces.WriteString("      - {name: default, masquerade: {}}\n")
	nets.WriteString("  - {name: default, pod: {}}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&ifaces, "      - {name: n%d, bridge: {}}\n", i)
		fmt.Fprintf(&nets, "  - {name: n%d, multus: {networkName: net-%d}}\n", i, i)
	}
	vmi, err := api.Load([]byte("kind: VirtualMachineInstance\nmetadata: {name: wide, namespace: bench, uid: 4d3c2b1a-0000-4000-8000-000000000064}\n" +
		"spec:\n  domain:\n    cpu: {cores: 4}\n    devices:\n      networkInterfaceMultiqueue: true\n      interfaces:\n" + ifaces.String() +
		"  networks:\n" + nets.String()))
	require.NoError(tb, err)
	pairs, err := api.Pairs(vmi)
	require.NoError(tb, err)
	recs := make([]cache.Interface, 0, len(pairs))
	for _, p := range pairs {
		if p.Binding() == api.BindingMasquerade {
			recs = append(recs, masqRecord(p.Interface.Name, p.PodInterface, "02:00:00:00:01:00"))
		} else {
			recs = append(recs, bridgeRecord(p.Interface.Name, p.PodInterface, fmt.Sprintf("02:00:00:00:02:%02x", p.Index), 1500))
		}
	}
	return vmi, writeRecords(tb, vmi.Metadata.UID, recs...)
}

func TestWideDomain(t *testing.T) {
	vmi, store := wideVMI(t, 64)
	dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{})
	require.NoError(t, err)
	require.Len(t, dom.Devices.Interfaces, 64)
	xml := mustMarshal(t, dom)
	path := t.TempDir() + "/wide.xml"
	require.NoError(t, writeFile(path, xml))
	testutil.ValidateDomain(t, path)
}

// BenchmarkRender64 renders the 64 interfaces of a domain from records
// already read, and marshals the domain.
func BenchmarkRender64(b *testing.B) {
	vmi, store := wideVMI(b, 64)
	items, err := phase2.ReadRecords(context.Background(), vmi, store, phase2.Options{})
	require.NoError(b, err)
	b.ReportAllocs()
	defer testutil.ReportCPU(b)()
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

// BenchmarkLoad64 reads and checks the 64 interface records of a VMI.
func BenchmarkLoad64(b *testing.B) {
	vmi, store := wideVMI(b, 64)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := phase2.ReadRecords(ctx, vmi, store, phase2.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
