// Package phase1 gives a VM's interfaces the pod's network: run by a
// privileged agent (CAP_NET_ADMIN and CAP_SYS_ADMIN for setns) for the pod's
// network namespace, it walks the VMI's interface/network pairs in
// spec.networks order, through the binding registry:
//
//  1. checks the namespace path (an nsfs network namespace, else a
//     [ErrNotNamespace]) and takes the VMI's and the namespace's locks,
//  2. refuses a namespace other than the one the VMI's records describe
//     (their namespace record, netns.json: a [*cache.NamespaceMismatchError],
//     permanent), removes temporary files an interrupted cache write left,
//     then reads every record of the VMI: one that is unsafe, corrupt, of
//     another version or of another binding fails the run before any
//     kernel call,
//  3. for every pair, discovers the pod link as the CNI left it (only when
//     no record says it was) and plans the interface record phase2 needs;
//     a plan error, a pod link phase1 already prepared
//     ([binding.ErrPrepared]) or a masquerade VM network overlapping the
//     pod's addresses or routes fails the run before any change,
//  4. for every pair, records the discovery (state "started") and the plan,
//     then prepares the namespace (bridge, tap, dummy, NAT, …),
//  5. marks every pair "finished" and syncs the cache directory once.
//
// All or none, per run: a failure at step 4 or 5 (a kernel step, a full
// disk, the caller's cancellation) undoes every interface this run began
// and no earlier run had finished, the failing one included, and removes
// their records, unless [Options.KeepOnFailure] is set. An interface whose
// record said "finished" when the run started is never undone by it: the
// VM may be running on it (QEMU holds its tap), so a repeated run that
// fails leaves it as it was (see [Run]). A run on a VMI that already
// runs is an update whose changes stand alone: absent interfaces are
// unplugged first, and a new interface that fails is undone alone while
// the others are plugged. Phase1 deletes or changes only links it
// created, which it marks (see package binding): a link under one of its
// names that it did not create is refused, never adopted and never
// deleted.
//
// Idempotence and convergence: every step is create-or-replace, and a
// re-run resumes from the recorded discovery (the kernel no longer shows
// the pod link as the CNI left it once step 4 has started), so running
// Run again after a failure or a SIGKILL at any step, cache writes
// included, or after it succeeded, converges to the same kernel state and
// byte-identical cache files. [Cleanup] returns the namespace to how the
// CNI left it.
//
// # Who may run phase1 at the same time
//
// Any number of processes may call Run and Cleanup concurrently, for any
// VMIs and namespaces, with stores on one root or several. Two calls for
// the same VMI (same UID and store root) or for the same network
// namespace with the same store root (however its path is spelled:
// /proc/<pid>/ns/net and a bind mount under /var/run/netns are one nsfs
// inode) never interleave: each holds an flock on the VMI's lock file
// (<root>/.lock-<uid>) and on the namespace's (<root>/.lock-netns-<dev>-<ino>,
// named by the nsfs inode), both 0600 in the store's root and removed when
// the call ends, for its whole duration, taken in that order. Only root
// can open them: a user who flocks the namespace file itself (0444) or
// /proc/self/ns/net holds nothing off. A call that finds a lock held
// waits until it is free, the context is done or [Options.LockWait] has
// passed; then it fails with an error matching [ErrLocked] that names the
// lock and says another run holds it. A killed holder's locks are
// released by the kernel. Runs with two different store roots are not
// serialised: give every agent of a node the same root.
//
// Errors: every failure is an [*Error] naming the interface and the step,
// around the binding's error, which names only its link, field and value
// (no interface and no binding name: this package adds the one, phase2 the
// other). [Error.Permanent] tells an agent whether to retry: permanent
// failures (validation, a foreign link, an address in use, an overlap, …)
// need someone to change the VMI, the pod or the node; everything else
// (EBUSY, EAGAIN, ENOBUFS, a lock held, …) is retried, and a re-run
// resumes. One method, Permanent rather than Temporary, because retryable
// is the default a resumable phase1 can afford and permanent is the
// exception a caller must act on, as with KubeVirt's CriticalNetworkError.
// [ErrLinkNotFound] and [ErrNotSupported] are the kernel seam's sentinels,
// re-exported so that one errors.Is works on what Run returns.
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
