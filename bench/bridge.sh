#!/bin/bash
# bridge.sh N — what a user would write instead of phase1 for N IPAM-less
# bridge interfaces: run inside the pod namespace (`ip netns exec POD
# bench/bridge.sh N`) where the CNI left veths net1..netN without
# addresses. Per interface: bridge k6t-netI with the NIC's MTU and a fixed
# MAC, a link-local address, TX checksum off, tap tapI owned by 107, the
# NIC takes the bridge's MAC, both enslaved, learning off, all up.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
[[ -n "$(ip netns identify $$ 2>/dev/null)" ]] || {
	echo "$(basename "$0"): run it inside a pod's network namespace (ip netns exec POD $0), not the host's" >&2
	exit 2
}
set -eu
n=${1:?usage: bridge.sh N}
for ((i = 1; i <= n; i++)); do
	nic=net$i br=k6t-net$i tap=tap$i idx=$((i - 1))
	mtu=$(cat /sys/class/net/$nic/mtu)
	mac=$(printf '02:6b:36:74:%02x:%02x' $((i / 256)) $((i % 256)))
	ip link add "$br" mtu "$mtu" address "$mac" type bridge
	ip link set "$nic" address "$mac"
	ip addr replace "169.254.$((75 + idx / 100)).$((10 + idx % 100))/32" dev "$br"
	ethtool -K "$br" tx off >/dev/null
	ip tuntap add "$tap" mode tap user 107 group 107 vnet_hdr
	ip link set "$tap" mtu "$mtu"
	ip link set "$nic" master "$br"
	ip link set "$tap" master "$br"
	ip link set "$br" up
	ip link set "$tap" up
	ip link set "$nic" up
	bridge link set dev "$nic" learning off
done
