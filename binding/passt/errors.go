package passt

import (
	"errors"
	"fmt"
)

// ErrSysctl is matched by the error of a sysctl phase1 could not read,
// parse or write; the error names the key under /proc/sys/net, the value
// and the cause, which it wraps too.
var ErrSysctl = errors.New("sysctl")

func sysctlError(key, value string, err error) error {
	return fmt.Errorf("%w net/%s (value %q): %w", ErrSysctl, key, value, err)
}
