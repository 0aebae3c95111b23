// Package cloudinit builds the small read-only disks a VM reads its first-boot
// configuration from, as KubeVirt's virt-launcher does in its preStartHook:
//
//   - NoCloud: an ISO 9660 image labelled "cidata" holding user-data,
//     meta-data and, when given, network-config ([NoCloud]).
//   - ConfigDrive: an image labelled "config-2" holding
//     openstack/latest/{user_data,meta_data.json,network_data.json}
//     ([ConfigDrive]).
//   - Sysprep: an image labelled "unattendCD" holding the files of a mounted
//     config map or secret that has an autounattend.xml or unattend.xml
//     ([Builder.Build]).
//
// The images are written in pure Go (github.com/diskfs/go-diskfs) with both
// Rock Ridge and Joliet, like KubeVirt's `xorrisofs -joliet -rock`: Rock Ridge
// keeps names such as "user-data" (a '-' is not allowed in a plain ISO 9660
// name) for Linux guests, Joliet keeps mixed-case long names such as
// "Autounattend.xml" for Windows. No external program is run.
//
// # Output layout
//
// [Builder.Build] writes, under its Dir (KubeVirt's values in brackets):
//
//	<Dir>/cloud-init-data/<namespace>/<name>/noCloud.iso      [/var/run/kubevirt-ephemeral-disks/…]
//	<Dir>/cloud-init-data/<namespace>/<name>/configdrive.iso  [/var/run/kubevirt-ephemeral-disks/…]
//	<Dir>/sysprep-disks/<volume>.iso                          [/var/run/kubevirt-private/sysprep-disks/…]
//
// KubeVirt puts the two kinds under two different roots; here one Dir holds
// both so a launcher needs one writable directory. domxml.ISOPath computes
// these paths, for the domain's disk sources and for Build alike. Build is
// the one writer of these images (the preStartHook's cloud-init step runs
// it); a VMI has at most one volume of each cloud-init kind (api.Validate).
// Inputs are read from files the kubelet mounted:
//
//	<SecretDir>/<volume>/{userdata|userData}         [/var/run/kubevirt-private/secret/<volume>/…]
//	<SecretDir>/<volume>/{networkdata|networkData}
//	<SysprepDir>/<volume>/*                          [/var/run/kubevirt-private/sysprep/<volume>/…]
//
// # Atomicity
//
// Every image is written to "<iso>.staging", synced, made mode 0644 and
// renamed over "<iso>"; the directory is synced too. On any error the staging
// file and the scratch directory are removed and an existing "<iso>" is left
// as it was. The decoded user data (which may hold secrets) only ever sits in
// a 0700 scratch directory beside the image while the image is written.
//
// # Errors
//
// Problems with the VMI's sources match [ErrBadSource]; the error names the
// field path (e.g. "spec.volumes[2].cloudInitNoCloud.userDataBase64") or the
// file, and wraps one of the sentinels ([ErrBadBase64], [ErrTooLarge],
// [ErrNoData], [ErrAmbiguous], [ErrSecretMissing], [ErrNoUnattend]); all
// but a missing mount or a file that is not regular also match
// api.ErrInvalid. I/O failures are wrapped with the image path.
//
// This package is part of phase2: it never touches the kernel and needs no
// privilege beyond writing Dir.
package cloudinit
