// Package names derives, in one place, every kernel name and address that
// phase1 invents for a pod interface: the in-pod bridge, the tap, the
// renamed pod NIC, the bridge's link-local address and the VM's MAC when
// the VMI sets none.
//
// The link names are KubeVirt v1.9.0's (pkg/network/link), which keep
// v0.53's for v0.53's pod interface names (eth0, net1, …): bridge
// "k6t-<pod>" and NIC "<pod>-nic", each without a leading "pod" (so
// "pod16477688c0e", KubeVirt 1.x's name for network "blue", gives
// "k6t-16477688c0e" and "16477688c0e-nic"); tap "tap0" for the primary
// interface and "tap<pod[3:]>" for the others. TestKubeVirtNames checks
// them against the output of KubeVirt's own functions
// (testdata/kubevirt-v1.9.0-names.json; its README says where it came from).
//
// KubeVirt does not handle longer names (it fails at link creation).
// Here a name that would be too long is replaced by a short form: the
// same prefix followed by the first hex digits of SHA-256(kind "/" pod),
// e.g. bridge "k6t-" + 11 hex digits. It is deterministic (a re-run finds
// the same links) and collision-resistant (44 bits for the bridge) while
// still telling its kind by its prefix.
package names
