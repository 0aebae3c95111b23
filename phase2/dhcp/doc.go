// Package dhcp is the single-client DHCP server phase2 runs on the in-pod
// bridge of a bridge or masquerade interface, so that the VM gets the
// address phase1 recorded for it.
//
// [NewConfigFor] turns a VMI, its interface, the phase1 cache record and the
// pod's resolv.conf into a [Config]: plain data, computed once, with an
// error naming the bad field. [Handler4] (DHCPv4) and [Handler6] (DHCPv6)
// map one request to one reply without any socket, so they are unit tested
// and fuzzed directly. [Server] binds them to the bridge (SO_BINDTODEVICE)
// with github.com/insomniacslk/dhcp's server4 and server6 and, for IPv6,
// sends router advertisements with github.com/mdlayher/ndp.
//
// What the VM gets (KubeVirt v0.53's options, see KUBEVIRT_V053.md §5):
// its address and mask, router, DNS servers and search list from the pod's
// resolv.conf, domain name (the longest search domain), hostname, MTU,
// classless static routes (RFC 3442) when the pod had more than one route,
// an infinite (999 days) lease, and the interface's dhcpOptions (TFTP
// server, boot file, NTP servers, private options 224–254).
//
// Differences from KubeVirt v0.53, on purpose:
//   - Without IPAM (the record's IPAMDisabled, or no IPv4 address) there is
//     nothing to serve: [NewConfigFor] returns [ErrIPAMDisabled] and the
//     caller starts no server.
//   - Only the VM's MAC is answered, by DHCPv4 (chaddr) and DHCPv6 (the
//     client's DUID-LL/LLT, EUI-64 link-local source or neighbour entry,
//     see [Handler6]). A record without a MAC (masquerade with a MAC
//     libvirt will generate) answers any client, as KubeVirt's masquerade
//     server does; the bridge binding requires the MAC.
//   - Replies fit the client's maximum message size (option 57, 576 bytes
//     by default): optional options are left out by priority and logged.
//   - The pod's IPv6 nameservers and the search list go to DHCPv6
//     (options 23, 24) and router advertisements (RDNSS, DNSSL).
//   - Every log line a packet can cause is rate-limited per message: 10
//     lines at once, then one per 10s, with the number left out reported
//     on the next line and when Serve ends.
//   - DHCPv4 replies are always broadcast on the bridge: the VM's address is
//     often also local to the pod namespace (bridge binding), so a unicast
//     reply would never leave it.
//   - For masquerade with IPv6 the server also sends router advertisements
//     (managed flag set) from the bridge's link-local address, so the guest
//     learns its default route without cloud-init network data. They start
//     when that address appears (the bridge has none until QEMU opened the
//     tap) and never block or fail [Server.Serve].
//
// Privileges: binding to UDP port 67/547 needs CAP_NET_BIND_SERVICE (or a
// low net.ipv4.ip_unprivileged_port_start), router advertisements need a
// raw ICMPv6 socket (CAP_NET_RAW): without it they are disabled with one
// warning and DHCP keeps serving. SO_BINDTODEVICE needs no capability on
// Linux ≥ 5.7.
package dhcp
