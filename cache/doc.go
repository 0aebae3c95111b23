// Package cache holds the files through which phase1 (privileged, in the
// pod's network namespace) hands its results to phase2 (the unprivileged
// virt-launcher).
//
// Layout, under a root directory chosen by the caller (KubeVirt uses
// /var/run/kubevirt-private):
//
//	<root>/<vmi-uid>/pod-interface-<iface>.json   progress and what was discovered ([PodInterface])
//	<root>/<vmi-uid>/interface-<iface>.json       what phase2 and DHCP need ([Interface])
//
// where <iface> is the VMI interface name. Each file is JSON with a
// "version" field; reading another version is a [*VersionError]. Writes are
// atomic: a temporary file in the same directory, fsync, rename, fsync of
// the directory, so a reader sees the old file or the new one, never a torn
// one (KubeVirt v0.53 writes in place). Files are mode 0644 in 0755
// directories so that the launcher (qemu, uid 107) can read them; nothing
// is world-writable.
//
// The store refuses what could let another user steer phase1: a root or
// record directory that is a symlink, world-writable, or owned by a user
// other than root or the caller; a file that is a symlink or owned by such
// a user ([*UnsafeError]); and names that could escape the root
// ([*NameError]).
package cache
