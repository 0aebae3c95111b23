package slirp

import "errors"

// ErrCIDR is matched by the error of a vmNetworkCIDR that is not an IPv4
// network; the error names the value.
var ErrCIDR = errors.New("vmNetworkCIDR")

// ErrSearchDomain is matched by the error of a search domain of the pod's
// resolv.conf that is not a DNS name and so cannot be passed to QEMU's
// dnssearch=; the error names the domain.
var ErrSearchDomain = errors.New("resolv.conf search domain")
