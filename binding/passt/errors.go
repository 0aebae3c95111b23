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

// PortError is a declared port Render cannot forward.
type PortError struct {
	Interface string
	Protocol  string
	Port      int32
}

func (e *PortError) Error() string {
	return fmt.Sprintf("cannot forward %s port %d", e.Protocol, e.Port)
}
