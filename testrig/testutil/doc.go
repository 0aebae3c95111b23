// Package testutil holds test helpers: precise skips that turn into
// failures under VIRTNET_REQUIRE_KERNEL=1, throwaway network namespaces,
// pod namespaces as a CNI leaves them, and golden files.
//
// # Golden files
//
// Every golden file of the module lives at testdata/<Test>/<case><ext>
// ([GoldenPath]) and is compared by [Golden]; the -update flag this
// package registers rewrites them instead. Domain XML goes through
// [CheckDomain]: compared, round-tripped through libvirtxml, validated
// with virt-xml-validate and defined in libvirt's test driver (virsh -c
// test:///default), whose parser refuses what the schema lets through.
// virsh and virt-xml-validate come with the Debian packages
// libvirt-clients and libxml2-utils; without them those steps skip
// through [Skip].
//
// # Pods made by the real CNI plugins
//
// [CNINetwork] drives the CNI reference plugins (bridge, ptp, host-local,
// loopback at the version go.mod pins; its tool directives make them
// buildable) through libcni, so that a test pod is exactly what a
// cluster's CNI leaves. The plugins are built with `go build` on first use
// into a cache directory ([CNIPluginDir]); the plugins run inside a node
// namespace the test creates, so every host-side link, bridge and route
// stays there. One named helper per shape:
//
//   - [NewFlannelPod]: bridge plugin, cni0, /24, MTU 1450, default route
//     via the bridge; [NewJumboFramePod] (MTU 9000) and [NewMinimumMTUPod]
//     (MTU 1280) are the same with another MTU;
//   - [NewKindnetPod]: ptp, /24 with the gateway on-link on the host side;
//   - [NewCalicoPod]: /32 on eth0, 169.254.1.1 on-link and the default
//     route via it, proxy ARP on the host side; made by hand, as Calico's
//     plugin is not a reference plugin (the only hand-made CNI shape);
//   - [NewDualStackPod]: bridge plugin with host-local's two ranges;
//   - [NewIPv6Pod]: ptp, IPv6 only.
//
// [Pod.Neighbor] adds a second pod on the same node and network (same
// bridge or ptp host side) to talk to; [CNINetwork.AttachSecondary] adds a
// secondary network the way Multus does, a second CNI ADD on the same
// container with CNI_IFNAME=net1. DEL runs at test cleanup.
//
// [NewPod] and [NewPodWith] are the older hand-made pod (a bare veth with
// the gateway on the node's end), kept for shapes no plugin makes: any
// link name, no IPAM at all, addresses chosen by the test.
//
// A test rig: importable so that every package's tests can use it, outside
// the compatibility promise (testrig/apicompat leaves testrig/ out), never
// imported by product code (testrig/layers).
package testutil
