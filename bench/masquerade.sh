#!/bin/bash
# masquerade.sh — what a user would write instead of phase1 for one
# masquerade interface: run inside the pod namespace (`ip netns exec POD
# bench/masquerade.sh`) where the CNI left eth0 with the pod IP. Bridge
# k6t-eth0 10.0.2.1/24 with TX checksum off, tap0 owned by 107, forwarding
# and route_localnet, and the NAT table virtnet's masquerade binding
# installs for ports tcp/80 and udp/53.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
[[ -n "$(ip netns identify $$ 2>/dev/null)" ]] || {
	echo "$(basename "$0"): run it inside a pod's network namespace (ip netns exec POD $0), not the host's" >&2
	exit 2
}
set -eu
mtu=$(cat /sys/class/net/eth0/mtu)
ip link add k6t-eth0 mtu "$mtu" address 02:00:00:00:00:00 type bridge
ip addr replace 10.0.2.1/24 dev k6t-eth0
ethtool -K k6t-eth0 tx off >/dev/null
ip link set k6t-eth0 up
ip tuntap add tap0 mode tap user 107 group 107 vnet_hdr
ip link set tap0 mtu "$mtu"
ip link set tap0 master k6t-eth0
ip link set tap0 up
sysctl -q -w net.ipv4.ip_forward=1
sysctl -q -w net.ipv4.conf.k6t-eth0.route_localnet=1
nft -f - <<'NFT'
table ip virtnet_nat {
	chain prerouting { type nat hook prerouting priority dstnat; iifname "eth0" counter jump KUBEVIRT_PREINBOUND; }
	chain output { type nat hook output priority -100;
		ip saddr 127.0.0.1 tcp dport { 49152, 49153 } counter return
		ip daddr 127.0.0.1 tcp dport 80 counter dnat to 10.0.2.2
		ip daddr 127.0.0.1 udp dport 53 counter dnat to 10.0.2.2
	}
	chain postrouting { type nat hook postrouting priority srcnat;
		ip saddr 10.0.2.2 counter masquerade
		oifname "k6t-eth0" counter jump KUBEVIRT_POSTINBOUND
	}
	chain KUBEVIRT_PREINBOUND {
		tcp dport 80 counter dnat to 10.0.2.2
		udp dport 53 counter dnat to 10.0.2.2
	}
	chain KUBEVIRT_POSTINBOUND {
		ip saddr 127.0.0.1 tcp dport { 49152, 49153 } counter return
		ip saddr 127.0.0.1 tcp dport 80 counter snat to 10.0.2.1
		ip saddr 127.0.0.1 udp dport 53 counter snat to 10.0.2.1
	}
}
NFT
