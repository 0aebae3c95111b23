// Package plugin is the macvtap CNI plugin: ADD moves a macvtap into the
// container's network namespace and configures it, DEL deletes it, CHECK
// verifies it. The cmd/macvtap-cni program wires [Plugin] into the CNI
// library's skel; tests call [Plugin.Add], [Plugin.Del], [Plugin.Check] (or
// the context-taking [Plugin.Setup], [Plugin.Teardown], [Plugin.Verify]) in
// process.
//
// # Which host link ADD takes
//
// As in kubevirt/macvtap-cni, deviceID names a macvtap that the device plugin
// created on the host when the kubelet allocated the device; deviceID never
// names the lower device. ADD looks, in the host namespace, for
//
//  1. a link named deviceID itself (the device plugin of kubevirt/macvtap-cni
//     up to v0.11 named the macvtap after the device ID, e.g. "eth0Mvp3"),
//  2. then a link named [macvtap.HostLinkName](deviceID) ("mvt" + 12 hex
//     digits: later releases, and this project's device plugin).
//
// The first of them that exists and is a macvtap is taken. If one exists
// but is not a macvtap, ADD fails with [ErrNotMacvtap] (it never moves a
// NIC). If none exists and the configuration has "lowerDevice", ADD creates
// a macvtap named HostLinkName(deviceID) on that lower device, in "mode"
// (bridge by default) and with the lower device's txqueuelen; otherwise ADD
// fails with [ErrDeviceNotFound].
//
// # What ADD does then
//
// In the host namespace: set the mode when the configuration names one and
// the link has another (`ip link set mvt… type macvtap mode vepa`); move the
// link into the container namespace (`ip link set mvt… netns …`; the kernel
// sets it down). In the container namespace: set the MTU, the MAC (CNI_ARGS
// MAC=… wins over "mac"), promiscuous mode, rename it to CNI_IFNAME, set it
// up, and chown /dev/tap<ifindex> to owner:group (107:107 by default, the
// qemu user of KubeVirt launcher images; skipped with a warning when the
// node does not exist, as on a system without devtmpfs). When "ipam" is
// configured, the IPAM plugin runs and its addresses, routes and DNS are
// reported in the result, bound to the interface, but not assigned in the
// pod: they belong to the VM, which owns the macvtap's MAC (kubevirt's
// macvtap plugin runs no IPAM at all). On any failure ADD undoes what it did:
// a macvtap it created is deleted, one already moved into the container is
// deleted there (the device plugin recreates it on the next allocation), and
// an IPAM allocation is released.
//
// ADD refuses to run when CNI_IFNAME already exists in the container
// ([ErrIfaceExists]), so a second ADD is a clean error that changes nothing.
//
// # DEL and CHECK
//
// DEL runs the IPAM plugin's DEL (when configured), then deletes CNI_IFNAME
// in the container namespace. A missing CNI_NETNS, a namespace path that is
// gone or no longer a namespace, and a missing link are all success (DEL must
// be idempotent); a CNI_IFNAME that is not a macvtap is left alone and
// reported ([ErrNotMacvtap]).
//
// CHECK needs prevResult; it verifies that the result names CNI_IFNAME in
// CNI_NETNS, and that the link there is an up macvtap with the expected MAC
// (CNI_ARGS, "mac", else the result's) and MTU ("mtu", when set), promiscuous
// when "promiscMode" is true, then runs the IPAM plugin's CHECK.
//
// All kernel work goes through per-namespace netlink handles (no setns of
// the calling thread); only opening the namespace uses the CNI plugins'
// pkg/ns. Root (CAP_NET_ADMIN, CAP_SYS_ADMIN) is needed; outside Linux every
// verb returns [ErrNotSupported].
package plugin
