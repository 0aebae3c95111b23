// Package nlhandle opens vishvananda/netlink handles bound to a network
// namespace. It is apart from nsexec so that phase2 and the launcher,
// which use nsexec, link no netlink library (phase2.TestNoKernelCodeLinked).
// It exists on Linux only (its callers are Linux files).
package nlhandle
