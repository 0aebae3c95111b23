// Package binding defines the seam between the phases and the binding
// methods. Each method (bridge, masquerade, slirp, sriov, macvtap, passt)
// lives in its own subpackage holding both of its halves side by side:
//
//   - [Phase1] (privileged, in the pod's network namespace): discover the pod
//     link, plan the cache record, prepare the kernel, undo it;
//   - [Phase2] (unprivileged): render the libvirt device from the cache
//     record.
//
// The registry that maps a method name to its implementation is in
// package binding/registry, so that this package stays importable by the
// implementations.
package binding
