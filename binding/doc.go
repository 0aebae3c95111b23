// Package binding defines the seam between the phases and the binding
// methods. Each method (bridge, masquerade, slirp, sriov, macvtap, passt)
// lives in its own subpackage holding both of its halves side by side:
//
//   - [Phase1] (privileged, in the pod's network namespace): discover the pod
//     link, plan the cache record, prepare the kernel, undo it;
//   - [Phase2] (unprivileged): render the libvirt device from the cache
//     record.
//
// A binding's errors name what the binding owns: the link, the field, the
// value. They do not repeat the interface or the binding's name, which
// their callers add once (phase1.Error: interface and step;
// phase2.RenderError: interface and binding); typed errors keep an
// Interface field for programs all the same. An error a retry cannot cure
// may say so with a method Permanent() bool (see phase1.Error.Permanent).
//
// The registry that maps a method name to its implementation is in
// package binding/registry, so that this package stays importable by the
// implementations.
package binding
