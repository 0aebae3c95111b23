// Package kernel is the real [netdriver.Driver]: netlink, nftables, taps
// and ethtool in one network namespace.
//
// [Open] returns the driver for a namespace path. It keeps one OS thread
// inside the namespace for the driver's life (nsexec.Thread, discarded on
// Close), so the process never switches namespace as a whole: the netlink
// and netfilter sockets are made there once and then work from any
// thread; the few operations that only work from inside (opening
// /dev/net/tun, /proc/sys/net, the ethtool ioctl) run on that thread.
// [OpenDriver] is the same behind the interface, on every OS (elsewhere it
// returns [netdriver.ErrNotSupported]).
package kernel
