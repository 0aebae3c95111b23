#!/usr/bin/env bash
# leakcheck.sh: fail when the test suite left something behind on this
# machine. Run it as root after the tests (the end of .ci/run):
#
#   scripts/leakcheck.sh                 # fail on any leftover
#   scripts/leakcheck.sh --save FILE     # record what is there now
#   scripts/leakcheck.sh --since FILE    # fail only on what is new since FILE
#
# Leftovers are: named network namespaces of the tests (vn-*, made by
# testutil.NewNS; vnb-* by the benchmarks) and their mounts under
# /run/netns; processes in a network namespace other than the script's whose
# program is one the tests start (the test binaries, dhclient, udhcpc,
# busybox, passt, pasta, qemu, libvirtd, dnsmasq, sleep); and the tests' directories
# under /run (virtnet-test-*) and /tmp (virtnet-libvirtd-*). It prints each leftover on its own line.
set -euo pipefail

mode=check file=
case "${1:-}" in
-h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;;
--save) mode=save file=$2 ;;
--since) mode=since file=$2 ;;
"") ;;
*) echo "usage: $0 [--save FILE | --since FILE]" >&2; exit 2 ;;
esac

leftovers() {
	local d n
	for d in /run/netns /var/run/netns; do
		[ -d "$d" ] || continue
		for n in "$d"/vn-* "$d"/vnb-*; do
			[ -e "$n" ] && echo "netns $(basename "$n")"
		done
	done
	awk '$5 ~ /^\/(var\/)?run\/netns\/vnb?-/ {print "mount " $5}' /proc/self/mountinfo
	local init pid ns comm
	init=$(readlink /proc/self/ns/net)
	# One process lists every process's namespace (readlink of ns/net).
	find /proc -mindepth 3 -maxdepth 3 -path '/proc/[0-9]*/ns/net' -printf '%h %l\n' 2>/dev/null |
		while read -r pid ns; do
			# A zombie has no namespace link: it runs nothing.
			[ -z "$ns" ] || [ "$ns" = "$init" ] && continue
			pid=${pid#/proc/}
			pid=${pid%/ns}
			comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
			case "$comm" in
			*.test | dhclient | udhcpc | busybox | passt* | pasta* | qemu* | libvirtd | dnsmasq | sleep)
				echo "process $pid $comm ($ns)" ;;
			esac
		done
	for d in /run/virtnet-test-* /tmp/virtnet-libvirtd-*; do
		[ -e "$d" ] && echo "dir $d"
	done
	return 0
}

now=$(leftovers | sort -u)
case $mode in
save) printf '%s\n' "$now" >"$file"; exit 0 ;;
since) now=$(comm -23 <(printf '%s\n' "$now") <(sort -u "$file") | sed '/^$/d') ;;
esac
# Directories under /run and mounts reported twice (/run and /var/run)
# are the same leftover; print each line once.
if [ -n "$now" ]; then
	echo "leakcheck: the tests left these behind:" >&2
	printf '%s\n' "$now" >&2
	exit 1
fi
echo "leakcheck: nothing left behind"
