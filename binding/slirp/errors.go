package slirp

import (
	"errors"
	"fmt"
)

// ErrCIDR is matched by the error of a vmNetworkCIDR that is not an IPv4
// network; the error names the value.
var ErrCIDR = errors.New("vmNetworkCIDR")

// SearchDomainError is a search domain of the pod's resolv.conf that is
// not a DNS name and so cannot be passed to QEMU's dnssearch=.
type SearchDomainError struct {
	Interface string
	Domain    string
}

func (e *SearchDomainError) Error() string {
	return fmt.Sprintf("resolv.conf search domain %q is not a DNS name", e.Domain)
}
