// Package nsexec is the module's one way into another network namespace:
// it runs a function inside it on a locked OS thread ([Do]), the way CNI's
// pkg/ns does, the only safe way to use setns(2) from Go. A [Thread] stays
// in one namespace for many calls (the kernel driver's life), and
// [nlhandle.Open] makes a vishvananda/netlink handle whose socket is bound
// to the namespace. Sockets made inside (rtnetlink, nftables, packet and
// ICMPv6 sockets) stay bound to it, so nothing else switches threads in
// and out (the test rigs excepted).
package nsexec
