// Package names derives, in one place, every kernel name and address that
// phase1 invents for a pod interface: the in-pod bridge, the tap, the
// renamed pod NIC, the bridge's link-local address and the VM's MAC when
// the VMI sets none.
//
// KubeVirt v0.53's forms are kept whenever they fit the kernel's limit of
// 15 bytes (IFNAMSIZ-1): bridge "k6t-<pod>", tap "tap<pod[3:]>", NIC
// "<pod>-nic". KubeVirt v0.53 does not handle longer names (it fails at
// link creation). Here a name that would be too long is replaced by a
// short form: the same prefix followed by the first hex digits of
// SHA-256(kind "/" pod), e.g. bridge "k6t-" + 11 hex digits. It is
// deterministic (a re-run finds the same links) and collision-resistant
// (44 bits for the bridge) while still telling its kind by its prefix.
package names
