// Package netdriver is the one seam through which phase1 changes the
// kernel: links, addresses, routes, sysctls, the ethtool TX checksum
// switch, taps and the masquerade NAT table, all in one network namespace.
//
// [Open] returns the real driver for a namespace path. It keeps one OS
// thread inside the namespace for the driver's life (nsexec.Thread,
// discarded on Close), so the process never switches namespace as a whole:
// the netlink and netfilter sockets are made there once and then work from
// any thread; the few operations that only work from inside (opening
// /dev/net/tun, /proc/sys/net, the ethtool ioctl) run on that thread.
// [Fake] is a stateful in-memory driver for unit tests: it records
// every call, can fail at call N, and returns the same typed errors.
//
// Every mutating method is create-or-replace where the kernel allows it, so
// that callers can re-run a sequence after a failure at any step.
package netdriver
