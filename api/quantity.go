package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var quantitySuffixes = []struct {
	suffix string
	mult   float64
}{
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50}, {"Ei", 1 << 60},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"E", 1e18},
}

// ParseQuantity parses a Kubernetes quantity of bytes ("1Gi", "512M",
// "1073741824", "1.5Gi") into bytes, rounding up to a whole byte. It
// rejects negative, fractional-milli ("100m") and out-of-range values.
func ParseQuantity(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty quantity")
	}
	mult := 1.0
	num := s
	for _, q := range quantitySuffixes {
		if strings.HasSuffix(s, q.suffix) {
			mult, num = q.mult, strings.TrimSuffix(s, q.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("quantity %q is not a number with a unit such as Mi or G", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("quantity %q is negative", s)
	}
	b := math.Ceil(v * mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("quantity %q is too large", s)
	}
	return uint64(b), nil
}

// ParseCPUQuantity parses a Kubernetes CPU quantity ("4", "500m", "1.5")
// into whole CPUs, rounding up as Kubernetes' Quantity.Value does (so
// "500m" is 1 and "1.5" is 2). It rejects negative and non-numeric
// values and counts above 2^32-1.
func ParseCPUQuantity(s string) (uint32, error) {
	s = strings.TrimSpace(s)
	num, div := s, 1.0
	if strings.HasSuffix(s, "m") {
		num, div = strings.TrimSuffix(s, "m"), 1000
	}
	if num == "" {
		return 0, fmt.Errorf("empty CPU quantity")
	}
	mult := 1.0
	for _, q := range quantitySuffixes {
		if div == 1 && strings.HasSuffix(num, q.suffix) {
			mult, num = q.mult, strings.TrimSuffix(num, q.suffix)
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || strings.ContainsAny(num, "xXpP_") {
		return 0, fmt.Errorf("CPU quantity %q is not a number of CPUs such as 2 or 500m", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("CPU quantity %q is negative", s)
	}
	n := math.Ceil(v * mult / div)
	if n > math.MaxUint32 {
		return 0, fmt.Errorf("CPU quantity %q is too large", s)
	}
	return uint32(n), nil
}
