package dhcp

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// ErrIPAMDisabled is returned by [NewConfigFor] when the interface has no IPv4
// address to hand out (the record's IPAMDisabled, or no IPv4): the VM gets
// layer 2 only and no DHCP server must run. It is not a failure.
var ErrIPAMDisabled = errors.New("dhcp: IPAM disabled, no DHCP server for this interface")

// ErrInvalidConfig is matched (with [errors.Is]) by every [FieldError].
var ErrInvalidConfig = errors.New("dhcp: invalid configuration")

// FieldError is an input [NewConfigFor] refuses: the field it came from (a
// cache record field such as "IPv4", a VMI path such as
// "dhcpOptions.ntpServers[1]", or "resolv.conf search"), the bad value and
// why.
type FieldError struct {
	Field  string
	Value  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("dhcp: %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is makes every FieldError match [ErrInvalidConfig].
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

// BindError is a socket [Server.Serve] could not open on the bridge: the
// interface, what was being opened ("dhcpv4 :67", "dhcpv6 :547",
// "router advertisements", "netns …") and the cause.
type BindError struct {
	Interface string
	Op        string
	Err       error
	// Holder names the process holding the port when the bind failed
	// because it is in use ("pid 42 (virt-launcher)": a second launcher
	// serving the same VM, a leftover server), or "" when it cannot be
	// seen from here.
	Holder string
}

func (e *BindError) Error() string {
	msg := fmt.Sprintf("dhcp: interface %q: %s: %v", e.Interface, e.Op, e.Err)
	if e.Holder != "" {
		msg += " (held by " + e.Holder + ": another launcher or DHCP server already serves this interface)"
	}
	switch c := e.Capability(); c {
	case CapNetBindService:
		msg += " (the launcher needs " + c + " to serve DHCP on ports 67 and 547, or net.ipv4.ip_unprivileged_port_start at most 67 in the pod)"
	case CapSysAdmin:
		msg += " (the launcher needs " + c + " to enter another network namespace: Hook.NetNS)"
	}
	return msg
}

// The capabilities a [BindError] names.
const (
	CapNetBindService = "CAP_NET_BIND_SERVICE"
	CapSysAdmin       = "CAP_SYS_ADMIN"
)

// Capability names the capability whose absence the error is, or "":
// [CapNetBindService] when binding a DHCP port was refused (EACCES),
// [CapSysAdmin] when entering the namespace was (EPERM).
func (e *BindError) Capability() string {
	denied := errors.Is(e.Err, syscall.EACCES) || errors.Is(e.Err, syscall.EPERM)
	switch {
	case !denied:
		return ""
	case e.Op == OpEnterNamespace:
		return CapSysAdmin
	case strings.Contains(e.Op, "udp"):
		return CapNetBindService
	}
	return ""
}

// OpEnterNamespace is the Op of a [BindError] for the server's namespace.
const OpEnterNamespace = "enter namespace"

func (e *BindError) Unwrap() error { return e.Err }

// holder is [socketHolder] for a bind that failed with EADDRINUSE, else
// "".
func holder(err error, port int, v6 bool) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return socketHolder(port, v6)
}
