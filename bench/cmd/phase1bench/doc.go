//go:build linux

// Command phase1bench times phase1 against the shell script a user would
// write instead (bench/bridge.sh, bench/masquerade.sh), in the same run and
// on the same kind of namespace: a pod namespace whose CNI links are veth
// pairs with their peers in a node namespace. It needs root.
//
// The table's ratio is phase1's time over the script's; -cache-dir puts
// phase1's caches on tmpfs (as /var/run usually is) or on disk, where
// each record's fsync dominates phase1's time.
//
//	go run ./bench/cmd/phase1bench -n 1,8,64 -runs 5 -scripts bench
//
// It prints one markdown table row per case (see -header): the median wall
// time of phase1 (kernel.Open, phase1.Run, Close) and of the script
// (`ip netns exec POD bash SCRIPT`), their ratio, the cost per interface,
// and the kernel round trips per interface that netdriver counted.
//
// With -peer DIR it times a peer's phase1 instead, KubeVirt's own (v0.53.2 or
// v1.9.0) being the one measured so far: the masquerade binding with
// two ports, IPv4 and dual-stack, on identical fresh pods (sides alternated,
// -settle after creating each pod), KubeVirt's NetConf.Setup call against
// our phase1 call, with ApplyNAT's share of ours and the kernel's share of
// that (the batches' sendmsg, kernel.Netlink.NATKernelTime). KubeVirt's
// side runs in a private mount namespace: a fresh tmpfs /run for its
// caches, its nftables files on /etc/nftables, and passwd/group files with
// the qemu user its cache writes chown to.
//
// DIR is the user's own; nothing in this repository makes one. It holds an
// executable kubevirt-phase1 that, given -vmi FILE (the VMI as JSON), -pid
// PID (a process in the pod's network namespace) and -cache ROOT, runs the
// peer's phase1 once and prints the nanoseconds that call took; bin/ with
// what it runs (KubeVirt's virt-chroot); nftables/ (v0.53.2's
// ipv4-nat.nft and ipv6-nat.nft); and a file version naming the release.
//
//	go run ./bench/cmd/phase1bench -peer DIR -runs 9 -cache-dir /dev/shm
//
// -peer-state DIR also writes each side's kernel state after the first run
// of each case (links, addresses, routes, rules, neighbours, the nftables
// ruleset, sysctls) to DIR/<case>.<side>.txt, for a diff
// (docs/kubevirt-1x-peer.md lists the differences with v1.9.0).
package main
