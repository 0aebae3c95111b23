// Package kvplugin is the glue between virtnet and KubeVirt 1.x's network
// binding plugins: the plugin names and the binding methods they stand
// for, the reduction of a KubeVirt VMI to the interfaces of one plugin,
// and the hand-off record from the binding CNI plugin to the hook sidecar.
//
// # The hand-off
//
// The CNI plugin (cmd/virtnet-binding-cni) runs phase1 at pod creation in
// the node's mount namespace; the sidecar (cmd/virtnet-binding-sidecar)
// runs later, unprivileged, in its own container. They share the pod's
// network namespace and nothing else: no file the CNI plugin writes is
// visible to the sidecar, and the sidecar cannot reach the API server for
// anything the CNI plugin saw. What the sidecar needs from phase1 (the
// VM's addresses, gateway, routes, MAC, MTU: the pod link's state before
// phase1 moved it) cannot be re-discovered from the kernel afterwards,
// because phase1 moved the pod address onto a down dummy and its routes
// went with it. So the CNI plugin stores a [Record] in the alias
// (IFLA_IFALIAS) of the tap it made for the interface:
//
//   - any process in the network namespace reads a link's alias with an
//     RTM_GETLINK dump, without capabilities; only CAP_NET_ADMIN in the
//     namespace can write it, i.e. the same trust as phase1's changes;
//   - it lives and dies with the tap: Cleanup deletes the tap, and no
//     stale record can outlive the interface it describes;
//   - the kernel replaces an alias in one operation: a reader sees the
//     old or the new record, never a torn one.
//
// An alias holds at most [MaxAlias] bytes. The record is a protocol
// buffer (schema kubevirt/hookapi/handoff/handoff.proto; encoded and
// decoded by the written-out codec of wire.go, so that the CNI plugin does
// not load the protobuf runtime) in base64 behind the prefix
// "virtnet/v<version> "; link names are not stored but derived again from
// the pod interface name (internal/names), so the record stays small. An
// alias without the prefix is foreign ([ErrForeignRecord]); another
// version is refused ([ErrRecordVersion]); a record for another binding
// or pod interface is refused ([ErrRecordMismatch]); a record that does not
// decode is corrupt ([ErrCorrupt]). [HandOff] is the sidecar's
// source of records for phase2's launcher path (a phase2.Records): the
// record on the tap with the VM's MAC.
//
// Outside the compatibility promise: the module's programs are this
// package's users; its API changes with them, whatever the version
// (testrig/apicompat leaves kubevirt/ out).
package kvplugin
