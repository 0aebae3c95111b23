// Package cache holds the files through which phase1 (privileged, in the
// pod's network namespace) hands its results to phase2 (the unprivileged
// virt-launcher).
//
// Layout, under a root directory chosen by the caller (KubeVirt uses
// /var/run/kubevirt-private):
//
//	<root>/<vmi-uid>/pod-interface-<iface>.json   progress and what was discovered ([Progress])
//	<root>/<vmi-uid>/interface-<iface>.json       what phase2 and DHCP need ([Interface])
//	<root>/<vmi-uid>/netns.json                   the namespace the records describe ([Namespace])
//
// where <iface> is the VMI interface name, and, while a phase1 run holds
// them, the lock files <root>/.lock-<vmi-uid> ([Store.LockVMI]) and
// <root>/.lock-netns-<dev>-<ino> ([Store.LockNamespace]), and, while a CNI
// plugin's verb holds it, <root>/.lock-.attachment-<vmi-uid>
// ([Store.LockAttachment]), 0600; lock files a killed run left are removed
// by [Store.RemoveStaleLocks].
// Each record is JSON with a "version" field; reading another version is a
// [*VersionError]. Addresses, prefixes and MACs are typed ([netip.Addr],
// [netip.Prefix], [MAC]) and parsed once, when the record is read: a value
// its type refuses is a [*CorruptError] naming the field by its JSON path
// ("routes[1].dst"); unset values are written as before (omitted, or ""). Files are mode 0644 in 0755 directories so that the
// launcher (qemu, uid 107) can read them; nothing is world-writable.
//
// # What a write guarantees
//
// Every record write is atomic: a temporary file (".tmp-*") in the same
// directory, written and fsynced, then renamed over the record (KubeVirt
// v0.53 writes in place). So a reader sees each record absent, old or new,
// never torn: after a SIGKILL at any point of a write, and after a machine
// crash. A writer opens the VMI's record directory once ([Store.OpenVMI]:
// its lock held, the directory checked); [Dir.PutProgress] and
// [Dir.PutInterface] leave the fsync of the directory to one [Dir.Sync]
// for many records (phase1 calls it once per run, before it returns), so a
// record is durable once Sync has returned: until then a machine
// crash may bring back the previous version of a record, or none, but never
// a torn one. A process killed inside a write may leave its temporary file
// behind; [Dir.RemoveTemps] removes them (phase1 does at the start of each
// run, under the VMI's lock).
//
// # What the store refuses
//
// The store refuses what could let another user steer phase1: a root or
// record directory that is a symlink, not a directory, world-writable
// (with or without the sticky bit: in a 1777 directory another user can
// take the names of records, directories and lock files first), or owned
// by a user other than root or the caller; a record or lock file that is
// a symlink, not a regular file, world-writable or owned by such a user
// ([*UnsafeError]); and names that could escape the root ([*NameError]).
//
// # Why there is no file system seam
//
// The store works on the real file system only (no afero-style interface
// under it). What it promises is the kernel's: rename(2) atomicity, fsync
// of a file and of its directory, O_NOFOLLOW opens and lstat/fstat checks
// against a symlink swapped in, flock on the lock files. An in-memory file
// system would test none of that, and a fake good enough to would be a
// second implementation to trust. Tests use a temporary directory, the
// SIGKILL tests kill real writers between the steps of a write, and
// failures such as a full disk are injected at each step of a real write
// ([WriteStep], through the store's test hook), so each promise above is
// checked on the file system it is made for.
package cache
