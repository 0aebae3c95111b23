// Package masquerade implements the masquerade binding: the VM sits behind
// NAT on a private network inside the pod, and the pod's address stays on
// the pod interface.
//
// Phase1 (phase1.go):
//
//	eth0 (untouched, 10.244.1.7/24)
//	k6t-eth0 (bridge, MAC 02:00:00:00:00:00, 10.0.2.1/24 [fd10:0:2::1/120], TX checksum off)
//	tap0 (owner root, 107 for a non-root VMI; master k6t-eth0)
//	sysctls: ipv4.ip_forward=1, ipv4.conf.k6t-eth0.route_localnet=1
//	         [ipv6.conf.all.forwarding=1, ipv6.conf.k6t-eth0.accept_dad=0]
//	nftables table virtnet_nat (ip [and ip6]), see netdriver.NAT:
//	  masquerade of the VM's traffic out of the pod; DNAT to the VM of the
//	  declared ports (every port when none is declared), from outside and
//	  from the pod's loopback (SNAT to the gateway); libvirt's migration
//	  ports 49152-49153 from loopback are never forwarded (unless
//	  status.migrationTransport is Unix: then there are none); with
//	  sidecar.istio.io/inject: "true", KubeVirt's Istio rules (see PlanNAT).
//
// The network is the pod network's vmNetworkCIDR (10.0.2.0/24 by default;
// vmIPv6NetworkCIDR fd10:0:2::/120): the gateway is its second address,
// the VM its third. A family is set up only when the pod link has a
// global address of it. The VM's MAC is the VMI's macAddress or a stable,
// locally administered one derived from the VMI UID and interface name
// (names.VMMAC), never the bridge's; the DHCP server answers that MAC only.
//
// Phase2 (phase2.go) renders the VM's NIC on k6t-eth0 like the bridge
// binding does.
//
// Deliberate differences from KubeVirt v0.53 (infraconfigurators/masquerade.go):
//   - NAT through nftables netlink in virtnet's own table, replaced
//     atomically, never by running nft or iptables; no iptables fallback.
//   - route_localnet on the bridge, without which the loopback rules
//     forward nothing (KubeVirt added the same in v0.57).
//   - No duplicate address detection on the bridge with IPv6, so inbound
//     IPv6 works as soon as phase1 returns.
//   - A stable VM MAC when the VMI sets none (KubeVirt leaves it to
//     libvirt and answers DHCP for any MAC).
//   - The declared ports of a protocol share one rule per chain with an
//     interval set of ports (KubeVirt adds three rules per port), so any
//     number of ports can be declared.
package masquerade
