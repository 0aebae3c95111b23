// Package api holds the subset of KubeVirt's VirtualMachineInstance schema
// that virtnet reads, decodes it from real KubeVirt manifests (YAML or JSON,
// kind VirtualMachineInstance or VirtualMachine), applies KubeVirt's
// defaults and validates it.
//
// The types mirror KubeVirt's JSON field names so that manifests decode
// unchanged. Fields outside the subset are ignored, except the device and
// volume kinds that KubeVirt knows and virtnet does not render (GPUs, host
// devices, …): those are recorded in [VMI.Unsupported] so that a renderer
// can refuse them by name instead of dropping them silently.
//
// Validation ([Validate]) returns every problem at once, joined with
// [errors.Join]; each is a [*FieldError] naming the field path and the bad
// value, and matches [ErrInvalid] with [errors.Is].
package api
