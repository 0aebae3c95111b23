// Package bridge implements the bridge binding: the VM takes over the pod
// interface's address and MAC, on a layer-2 bridge inside the pod.
//
// Phase1 (Discover, Plan, Prepare, Cleanup in phase1.go), with IPAM (the
// pod link has an IPv4 address):
//
//	eth0 (veth, 10.244.1.7/24)  ──rename──▶  eth0-nic, MAC := bridge's, learning off ─┐
//	dummy eth0 (NOARP, down) keeps 10.244.1.7/24 so the kubelet still sees it          │
//	k6t-eth0 (bridge, 169.254.75.1N/32, TX checksum off, MTU of eth0) ◀────────────────┤
//	tap0 (owner root, 107 for a non-root VMI; multi_queue when asked, MTU of eth0) ─────────────────────────────┘
//
// The VM gets the pod's original MAC (or the VMI's macAddress) and, over
// DHCP from the bridge's link-local address, the pod IP and the pod
// link's IPv4 routing as the pod has it: every route but the connected
// one in option 121 (on-link routes first), the default route's gateway
// in option 3 and none when the link has no default route. A link
// without a connected route for its subnet (ptp) gives the VM its address
// as a /32, so that the subnet goes through the gateway as in the pod. Without an IPv4 address the
// pod link keeps its name, no dummy is made and no DHCP server runs
// (layer 2 only). net.ipv4.conf.all.arp_ignore=1 keeps the pod from
// answering ARP for the address on the dummy.
//
// Phase2 (Render in phase2.go) adds the <interface>; see there for the two
// forms. Phase1 always makes tap0, since it cannot know which form the
// launcher renders: with type='bridge' libvirt adds its own tap and tap0
// stays an unused port (no carrier, so the bridge forwards nothing to it).
//
// Deliberate differences from KubeVirt v0.53 (pkg/network/infraconfigurators/bridge.go):
//   - The bridge gets an explicit MAC derived from the VMI UID and
//     interface name (names.BridgeMAC) instead of a random one, so that a
//     re-run finds the NIC already holding it and changes nothing.
//   - The bridge and the tap get the pod link's MTU explicitly.
//   - A half-done namespace (renamed NIC, no dummy yet, …) is resumed
//     from the recorded discovery; a link of another type under one of the
//     names, or an address another link holds, is refused before anything
//     changes.
//   - Cleanup restores the pod link (name, MAC, MTU, addresses, routes).
//   - Routes: v0.53 takes the first route's gateway as the router (with a
//     static route only, a default route through a secondary network),
//     drops the routes whose source is the pod IP (all of ptp's, so that
//     a VM on a ptp pod ARPs for its neighbours, which ptp's host side
//     never answers) and sends option 121 only when the link had more
//     than one route. Here only a default route gives a router, ptp's
//     routes are delivered, and option 121 carries every non-connected
//     route. A pod link with IPAM and no gateway is served its address
//     alone (v0.53 does the same; it fails only on a link with no route).
package bridge
