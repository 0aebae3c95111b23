package slirp

import "fmt"

// PortError is a declared port Render cannot forward.
type PortError struct {
	Interface string
	Protocol  string
	Port      int32
}

func (e *PortError) Error() string {
	return fmt.Sprintf("cannot forward %s port %d", e.Protocol, e.Port)
}

// CIDRError is a vmNetworkCIDR that is not an IPv4 network.
type CIDRError struct {
	Interface string
	Value     string
}

func (e *CIDRError) Error() string {
	return fmt.Sprintf("vmNetworkCIDR %q is not an IPv4 CIDR", e.Value)
}

// SearchDomainError is a search domain of the pod's resolv.conf that is
// not a DNS name and so cannot be passed to QEMU's dnssearch=.
type SearchDomainError struct {
	Interface string
	Domain    string
}

func (e *SearchDomainError) Error() string {
	return fmt.Sprintf("resolv.conf search domain %q is not a DNS name", e.Domain)
}
