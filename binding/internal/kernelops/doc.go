// Package kernelops holds the kernel steps the in-tree bindings share,
// written on [netdriver.Driver]: reading a pod link as the CNI left it,
// creating the bridge, tap and dummy under phase1's ownership marks
// (binding.Mark; a link without the mark is refused and never deleted),
// giving addresses and sysctls idempotently, and restoring a pod link
// exactly on Cleanup.
//
// It is internal on purpose: these steps are the in-tree bindings'
// implementation, not the seam. An outside binding is written against
// binding.Binding and netdriver.Driver alone (examples/custom-binding);
// what callers match (binding.ForeignLinkError, PodLinkError,
// AddressInUseError, ErrPrepared, ErrNoAddress) stays in package binding.
package kernelops
