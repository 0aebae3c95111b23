package passt

import "fmt"

// SysctlError is a sysctl phase1 could not read, parse or write.
type SysctlError struct {
	Interface string
	// Key is the sysctl under /proc/sys/net ("ipv4/ping_group_range").
	Key   string
	Value string
	Err   error
}

func (e *SysctlError) Error() string {
	return fmt.Sprintf("sysctl net/%s (value %q): %v", e.Key, e.Value, e.Err)
}

func (e *SysctlError) Unwrap() error { return e.Err }
