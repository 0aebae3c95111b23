package api

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func measureAlloc(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func nestObj(depth int, key string) string {
	return strings.Repeat(`{"`+key+`":`, depth) + "0" + strings.Repeat("}", depth)
}

func TestZZMeasure(t *testing.T) {
	head := `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"a"},"spec":{"domain":{"devices":{}}},"status":`
	shapes := map[string]string{
		"deep9000key100": head + nestObj(9000, strings.Repeat("k", 100)) + "}",
		"deep1000key1000": head + nestObj(1000, strings.Repeat("k", 1000)) + "}",
		"flat":           head + `{"k":"` + strings.Repeat("x", 1<<20) + `"}}`,
		"deeparr9999":    head + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + "}",
		"wideunknown":    `{"kind":"VirtualMachineInstance","spec":{` + strings.Repeat(`"zz":0,`, 100000) + `"domain":{"devices":{}}}}`,
		"widedup":        `{"kind":"VirtualMachineInstance","spec":{` + strings.Repeat(`"domain":{},`, 50000) + `"domain":{"devices":{}}}}`,
	}
	for name, s := range shapes {
		for _, lenient := range []bool{false, true} {
			var err error
			n := measureAlloc(func() { _, err = decode([]byte(s), lenient) })
			fmt.Printf("%-16s lenient=%v size=%8d alloc=%12d ratio=%8.1f err=%.80v\n", name, lenient, len(s), n, float64(n)/float64(len(s)), err)
		}
	}
}
