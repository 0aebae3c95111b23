package kvplugin

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResolveMemoryBounded: what one OnDefineDomain message can make the
// sidecar's VMI decoding (Resolve) allocate is at most 8 times the VMI
// plus 4 MiB, whatever the VMI's shape, at the message limit (1 MiB):
// deep under status (objects with long keys, lists), wide. Before, they
// allocated 4.6 GB, 160 MB and 32 MB (now 5.3 MB, 1.9 MB, 7.8 MB).
func TestResolveMemoryBounded(t *testing.T) {
	const size = 1 << 20
	head := `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"v","uid":"u"},` +
		`"spec":{"domain":{"devices":{"interfaces":[{"name":"default","binding":{"name":"virtnet-masquerade"}}]}},"networks":[{"name":"default","pod":{}}]},"status":`
	key := strings.Repeat("k", size/9000-4)
	var wide strings.Builder
	wide.WriteString(`{"k":0`)
	for i := 0; wide.Len() < size-len(head)-2; i++ {
		fmt.Fprintf(&wide, `,"k%d":0`, i)
	}
	wide.WriteString("}")
	served := func(p string) (string, bool) { m, err := MethodFor(p); return m, err == nil }
	for name, status := range map[string]string{
		"deep objects": strings.Repeat(`{"`+key+`":`, 9000) + "0" + strings.Repeat("}", 9000),
		"deep lists":   `{"l":` + strings.Repeat("[", 9900) + strings.Repeat("]", 9900) + `,"p":"` + strings.Repeat("x", size-len(head)-19900) + `"}`,
		"wide":         wide.String(),
	} {
		t.Run(name, func(t *testing.T) {
			vmi := []byte(head + status + "}")
			require.InDelta(t, size, len(vmi), size/20)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Resolve(vmi, served)
			runtime.ReadMemStats(&after)
			n := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes in, %d allocated (%.1f×), error: %v", len(vmi), n, float64(n)/float64(len(vmi)), err)
			require.NoError(t, err)
			require.LessOrEqual(t, n, uint64(8*len(vmi)+4<<20))
		})
	}
}
