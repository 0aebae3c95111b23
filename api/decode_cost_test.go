package api

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// allocated is what f allocates, in bytes (runtime.MemStats.TotalAlloc).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// costShapes are JSON VMIs of about size bytes each, of every shape a
// caller picks: flat, deep (objects and lists, long and short keys), one
// long key, wide (distinct, duplicate and unknown keys), under status
// (accepted in both modes) and under spec (unknown there).
func costShapes(size int) map[string]string {
	const head = `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a"},"spec":{"domain":{"devices":{}}},"status":`
	pad := func(s string) string { // a string value that brings s to size
		n := max(size-len(s)-len(`{"p":"",}`), 0)
		return `{"p":"` + strings.Repeat("x", n) + `",` + s[1:]
	}
	nest := func(depth, keyLen int, leaf string) string {
		k := `{"` + strings.Repeat("k", keyLen) + `":`
		return strings.Repeat(k, depth) + leaf + strings.Repeat("}", depth)
	}
	wide := func(n int, key func(int) string) string { // n bytes of keys
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%s":0`, key(i))
		}
		b.WriteString("}")
		return b.String()
	}
	deepLong := nest(2000, size/2000-5, "0")
	dupsAtBottom := nest(2000, size/2000-10, wide(size/2000*8, func(int) string { return "d" }))
	return map[string]string{
		"flat":                      head + pad(`{"k":0}`) + "}",
		"deep status, long keys":    head + deepLong + "}",
		"deep status, short keys":   head + pad(nest(9900, 1, "0")) + "}",
		"deep status lists":         head + pad(`{"l":`+strings.Repeat("[", 9900)+strings.Repeat("]", 9900)+"}") + "}",
		"deep unknown spec field":   `{"kind":"VirtualMachineInstance","spec":{"domain":{"devices":{}},"futureKnob":` + deepLong + "}}",
		"deep, duplicates at depth": head + dupsAtBottom + "}",
		"one long key":              head + `{"` + strings.Repeat("k", size) + `":0}}`,
		"one long unknown spec key": `{"kind":"VirtualMachineInstance","spec":{"` + strings.Repeat("k", size) + `":0}}`,
		"wide status, distinct":     head + wide(size, func(i int) string { return fmt.Sprintf("k%d", i) }) + "}",
		"wide spec, duplicates":     `{"kind":"VirtualMachineInstance","spec":` + wide(size, func(int) string { return "domain" }) + "}",
		"wide spec, unknown":        `{"kind":"VirtualMachineInstance","spec":` + wide(size, func(i int) string { return fmt.Sprintf("u%d", i) }) + "}",
	}
}

// TestDecodeMemoryLinear: both decoders (Decode, DecodeKubeVirt) allocate
// at most 8 times the input plus 4 MiB, whatever the input's shape:
// depth (nesting, up to JSON's 10 000 levels), key length, width. Before,
// each level of nesting made a copy of its whole path: a 1 MB VMI nested
// 9000 levels under status allocated 4.1 GB (now 5.7 MB).
func TestDecodeMemoryLinear(t *testing.T) {
	const size = 256 << 10
	for name, doc := range costShapes(size) {
		require.InDelta(t, size, len(doc), size/10, name)
		for _, lenient := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lenient=%v", name, lenient), func(t *testing.T) {
				var err error
				n := allocated(func() { _, err = decode([]byte(doc), lenient) })
				t.Logf("%d bytes in, %d allocated (%.1f×), error: %.80v", len(doc), n, float64(n)/float64(len(doc)), err)
				require.LessOrEqual(t, n, uint64(8*len(doc)+4<<20))
				if err != nil {
					require.Less(t, len(err.Error()), 128<<10, "the error's size is bounded too")
				}
			})
		}
	}
}

// TestDecodeYAMLMemoryLinear: a YAML manifest (Decode only; DecodeKubeVirt
// takes JSON) costs at most 160 times its size plus 4 MiB, whatever its
// shape. YAML's parser holds a node of about a hundred bytes per scalar,
// so a manifest of tiny nodes costs far more per byte than JSON; what is
// bounded here is that nothing grows faster than the manifest: the
// duplicate-key walk of a manifest with aliases made a copy of each
// node's whole path (a 936 KB manifest nested 9000 levels allocated
// 4.2 GB, now 49 MB).
func TestDecodeYAMLMemoryLinear(t *testing.T) {
	const size = 256 << 10
	const head = "kind: VirtualMachineInstance\nspec:\n  domain:\n    devices: {}\nstatus: "
	key := strings.Repeat("k", size/2000-4)
	deep := strings.Repeat("{"+key+": ", 2000) + "0" + strings.Repeat("}", 2000)
	var wide strings.Builder
	for i := 0; wide.Len() < size; i++ {
		fmt.Fprintf(&wide, "  k%d: 1\n", i)
	}
	for name, doc := range map[string]string{
		"deep, flow":          head + deep + "\n",
		"deep, flow, aliased": head + "&a " + deep + "\nx: *a\n",
		"tiny nodes":          head + "[" + strings.Repeat("1,", size/2) + "1]\n",
		"wide, block":         head + "\n" + wide.String(),
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			n := allocated(func() { _, err = Decode([]byte(doc)) })
			t.Logf("%d bytes in, %d allocated (%.1f×), error: %.80v", len(doc), n, float64(n)/float64(len(doc)), err)
			require.LessOrEqual(t, n, uint64(160*len(doc)+4<<20))
			_, err = DecodeKubeVirt([]byte(doc))
			require.ErrorContains(t, err, "not JSON")
		})
	}
}
