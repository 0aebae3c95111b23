// Package api holds the subset of KubeVirt's VirtualMachineInstance schema
// that virtnet reads, decodes it from real KubeVirt manifests (YAML or JSON,
// kind VirtualMachineInstance or VirtualMachine), applies KubeVirt's
// defaults and validates it.
//
// The types mirror KubeVirt's JSON field names so that manifests decode
// unchanged. [Decode] is as strict as the API server with strict field
// validation, and tells three kinds of field apart:
//
//   - unknown: a key in neither KubeVirt's schema (v0.53.2's or v1.9.0's
//     VirtualMachineInstance and VirtualMachine, embedded from their OpenAPI
//     documents in kubevirt_schema.json) nor virtnet's types, or a key in
//     the wrong case: an error by path, as kubectl would refuse it;
//   - known to KubeVirt, not read by virtnet, without effect on the domain
//     (scheduling, probes, status, …): accepted and ignored;
//   - known to KubeVirt, not rendered by virtnet although it changes the
//     guest (GPUs, host devices, volume sources other than those of
//     [Volume], …): accepted and recorded by path in [VMI.Unsupported], so
//     that a renderer can refuse them by name instead of dropping them
//     silently.
//
// A key given twice in one object is an error too, and YAML aliases may
// not expand a manifest beyond [MaxAliasExpansion] times its size.
//
// Validation ([Validate]) returns every problem at once, joined with
// [errors.Join]; each is a [*FieldError] naming the field path and the bad
// value, and matches [ErrInvalid] with [errors.Is].
package api
