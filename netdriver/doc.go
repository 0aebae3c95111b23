// Package netdriver is the one seam through which a binding changes the
// kernel in phase1: links, addresses, routes, sysctls, the ethtool TX
// checksum switch, taps and the masquerade NAT table, all in one network
// namespace. A binding's Discover, Prepare and Cleanup receive a [Driver]
// bound to the pod's namespace and call nothing else.
//
// This package holds the interface and its plain-data types only (no
// kernel code): the bindings, and through them phase2 and an unprivileged
// virt-launcher, import it without linking netlink or nftables. The
// implementations live elsewhere:
//
//   - netdriver/kernel is the real driver (rtnetlink through
//     vishvananda/netlink and its own one-link queries, nftables through
//     google/nftables, taps and ethtool by ioctl). phase1 opens it; a
//     binding's own kernel tests may too.
//   - netdriver/netdrivertest is [Driver] in memory for unit tests: it
//     records every call, can fail at call N and returns the same typed
//     errors ([LinkNotFoundError], [ErrInvalidNAT]).
//
// Every mutating method is create-or-replace where the kernel allows it,
// so that callers can re-run a sequence after a failure at any step.
package netdriver
