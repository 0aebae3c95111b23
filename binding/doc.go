// Package binding defines the seam between the phases and the binding
// methods. Each method (bridge, masquerade, slirp, sriov, macvtap, passt)
// lives in its own subpackage holding both of its halves side by side:
//
//   - [Phase1] (privileged, in the pod's network namespace): discover the pod
//     link, plan the cache record, prepare the kernel, undo it, through a
//     netdriver.Driver and nothing else;
//   - [Phase2] (unprivileged): render the libvirt device from the cache
//     record.
//
// Optional interfaces say what else a binding needs: [DHCPServer] (the
// launcher serves its guest DHCP) and [DeviceAliaser] (its device's alias
// is not ua-<name>).
//
// # Bindings from outside this module
//
// A [Binding] written in another module imports only public packages
// (api, binding, cache, netdriver, libvirtxml) and is registered in a
// [Registry] under the name a VMI interface gives in KubeVirt 1.x's
// binding: {name: …} (api.Interface.Plugin); phase1.Options.Registry,
// phase2.Options.Registry and prestart.Hook.Registry take the registry.
// examples/custom-binding is one, with its tests: its convergence under a
// failure at every kernel call (testrig/testutil/phase1test), its domain
// against libvirt's schema, and a run on a pod the CNI plugins made. The
// kernel steps virtnet's own bindings share (ownership marks, pod link
// discovery and restore) are internal (binding/internal/kernelops): they
// are those bindings' implementation, not the seam; what a caller matches
// ([ForeignLinkError], [PodLinkError], [AddressInUseError], [ErrPrepared])
// and the ownership mark ([Mark]) are here.
//
// # Stability
//
// The binding SDK (this package's interfaces, the records of package cache,
// netdriver.Driver) is experimental until v1: a minor release may change
// it, and the CHANGELOG names every such change under its package and name
// (testrig/apicompat fails on one it does not name).
//
// # Why Prepare converges in place
//
// [Phase1.Prepare] reads the namespace and changes what differs from the
// record, call by call, rather than returning a declarative plan that an
// engine diffs and applies. The kernel is the only state that matters and
// it changes under phase1 (a previous run killed half-way, a CNI CHECK,
// the kernel adding a link-local address or a prefix route by itself):
// a plan computed before the first call would be stale after it. Each
// binding knows which of its steps the kernel undoes or redoes by itself
// (an address's prefix route, a renamed link's altname), which a generic
// diff would have to be taught binding by binding. And the property that
// matters, convergence after a failure at any call, is tested directly:
// every binding's package fails each kernel call of a clean run in turn
// and re-runs (testrig/testutil/phase1test), and the reliability suite
// does it with SIGKILL on the real kernel.
//
// A binding's errors name what the binding owns: the link, the field, the
// value. They do not repeat the interface or the binding's name, which
// their callers add once (phase1.Error: interface and step;
// phase2.ErrRender: interface and binding); typed errors keep an
// Interface field for programs all the same.
//
// The rule for errors, in every package of the module: a type where a
// caller branches on its fields (a path, a link name, an address);
// otherwise a package sentinel wrapped with %w. One type per concept.
// Whether a retry can cure an error is asked of the error itself: an
// error that a retry cannot cure says so with a method Permanent() bool,
// and phase1.IsPermanent asks the first error in the chain that has one
// (see phase1.Error.Permanent). The core bindings' errors do it that way,
// and so does a binding outside this module.
//
// The registry that maps a method name to its implementation is in
// package binding/registry, so that this package stays importable by the
// implementations.
package binding
