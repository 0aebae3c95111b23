// Package phase1 gives a VM's interfaces the pod's network: run by a
// privileged agent (CAP_NET_ADMIN and CAP_SYS_ADMIN for setns) for the pod's
// network namespace, it walks the VMI's interface/network pairs in
// spec.networks order and, for each, through the binding registry:
//
//  1. discovers the pod link as the CNI left it (only on the first run),
//  2. records the discovery in the pod-interface cache (state "started"),
//  3. plans the interface record phase2 needs and writes it,
//  4. prepares the namespace (bridge, tap, dummy, NAT, …),
//  5. marks the pod-interface record "finished".
//
// Idempotence and convergence: every step is create-or-replace, and a
// re-run resumes from the recorded discovery (the kernel no longer shows
// the pod link as the CNI left it once step 4 has started), so running
// Run again after a failure at any step, or after it succeeded, converges
// to the same kernel state and byte-identical cache files. [Cleanup]
// returns the namespace to how the CNI left it.
//
// Deliberate differences from KubeVirt v0.53 (pkg/network/setup):
//   - A pair found in state "started" is resumed, not refused: KubeVirt
//     treats it as a critical error because it cannot tell how far it got;
//     here every step checks the kernel first.
//   - Caches are written atomically (package cache) and phase1 may run in
//     any process: state is in the cache, not in an in-memory map.
//   - Masquerade gets a stable VM MAC derived from the VMI UID when the VMI
//     sets none (KubeVirt leaves it to libvirt), so that the DHCP server can
//     answer that MAC only.
//   - Names longer than 15 bytes get a hashed short form (package
//     internal/names); KubeVirt v0.53 fails on them.
//   - NAT uses virtnet's own nftables table through netlink, never the nft
//     or iptables binaries, and sets route_localnet on the bridge so that
//     connections from the pod's loopback reach the VM.
package phase1
