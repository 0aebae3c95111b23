#!/bin/sh
# inittrace.sh N BIN... — package initialisation of CNI plugin binaries as the
# Go runtime reports it (GODEBUG=inittrace=1, CNI_COMMAND=VERSION): the runs
# are interleaved (BIN1, BIN2, ... N times) so that the machine's load falls on
# every binary alike; prints per binary the median, first and third quartile
# of the summed init clock time, the packages with init work and the bytes
# they allocate. docs/cni-startup.md has the figures.
set -eu
n=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=0
while [ "$i" -lt "$n" ]; do
	j=0
	for b in "$@"; do
		echo '{"cniVersion":"1.1.0"}' | env -i CNI_COMMAND=VERSION GODEBUG=inittrace=1 "$b" 2>&1 >/dev/null |
			awk '$1=="init"{s+=$5; c++; by+=$8} END{print s, c, by}' >>"$dir/$j"
		j=$((j + 1))
	done
	i=$((i + 1))
done
j=0
for b in "$@"; do
	sort -n "$dir/$j" | awk -v b="$b" '{a[NR]=$1; c=$2; by=$3}
		END{printf "%-40s median %.2f ms (quartiles %.2f-%.2f), %d packages with init, %d B\n", b, a[int((NR+1)/2)], a[int(NR/4)+1], a[int(3*NR/4)], c, by}'
	j=$((j + 1))
done
