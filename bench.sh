#!/bin/bash
# bench.sh — runs virtnet's benchmarks (root: they create network
# namespaces) and prints ONE markdown table with the machine. Not part of
# CI. RUNS (default 3) sets the phase1/script runs per case.
# PEER_DIRS="DIR ..." adds rows against a peer's phase1 (each DIR laid out
# as phase1bench's doc says, KubeVirt's own v0.53.2 or v1.9.0 so far; the
# user brings it, nothing here makes one), timed against ours on identical
# fresh pods.
# MIGRATION_LOG=FILE adds the migration-downtime line from the FIGURE lines
# of `go test -v -count 5 -run 'TestLiveMigration$' ./e2e/` in FILE (the
# e2e test boots guests: not run here).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")"
runs=${RUNS:-3}
[ "$(id -u)" = 0 ] || { echo "bench.sh: needs root (network namespaces)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "Machine: ${cpu:-unknown CPU}, $(nproc) cores, kernel $(uname -r), $(go version | cut -d' ' -f3)"
echo

go build -o "$tmp/phase1bench" ./bench/cmd/phase1bench
# The pod's caches: /var/run is tmpfs in a pod; on disk each record's
# fsync dominates.
# -settle: the kernel tears a run's namespaces down asynchronously, under
# the rtnl lock the next run needs.
"$tmp/phase1bench" -n 1,8,64,256 -runs "$runs" -settle 1s -scripts bench -cache-dir /dev/shm >"$tmp/p1-tmpfs"
"$tmp/phase1bench" -n 64 -runs "$runs" -settle 1s -scripts bench -masquerade=false -header=false -cache-dir /var/tmp >"$tmp/p1-disk"
# phase1 as the whole virtnet-xml -netns process (exec, init, decode,
# phase1, render) against the script, masquerade ×1.
go build -o "$tmp/virtnet-xml" ./examples/virtnet-xml
"$tmp/phase1bench" -n 1 -runs "$((runs > 7 ? runs : 7))" -settle 1s -scripts bench -header=false -cache-dir /dev/shm \
	-process "$tmp/virtnet-xml" | grep masquerade >"$tmp/p1-process"

gobench() { # pkg regexp benchtime
	go test "$1" -run '^$' -bench "$2" -benchtime "$3" -count 1 | grep '^Benchmark'
}
: >"$tmp/peer"
for dir in ${PEER_DIRS:-}; do
	"$tmp/phase1bench" -peer "$dir" -runs "$((runs > 5 ? runs : 5))" -settle 1s -header=false -cache-dir /dev/shm |
		sed "s/^| /| $(cat "$dir/version") /" >>"$tmp/peer"
done
gobench ./phase2 'Render1$|Render64$|Load64$' 2s >"$tmp/go"
gobench ./examples/virtnet-xml 'DecodeRender$' 2s >>"$tmp/go"
gobench ./netdriver/kernel 'ApplyNAT$' 40x >>"$tmp/go"
gobench ./phase2/dhcp 'DiscoverAck$|ServerHeap$' 2000x >>"$tmp/go"
# CNI plugins as whole processes, against the reference bridge plugin, in one run.
gobench ./bench 'CNIProcess$|CNIStartup$' 21x >"$tmp/cni"
# A node of 100 pods: ADD, CHECK, GC, DEL, 10 pods at a time.
gobench ./bench 'CNINode$' 1x >"$tmp/cninode"
# One plugged layer-2 bridge interface on a running VM's pod.
gobench ./bench 'HotplugPhase1$' 21x >"$tmp/hotplug"
# The masquerade sidecar's resident memory, idle and over 1,000 calls.
gobench ./bench 'SidecarRSS$' 1x >"$tmp/sidecar"

echo "| benchmark | result | per interface | notes |"
echo "|---|---:|---:|---|"
# phase1 rows: | case | ours | script | ratio | ours/iface | script/iface | req/iface |
tail -n +3 "$tmp/p1-tmpfs" | awk -F' \\| ' '{gsub(/^\| /,"",$1); gsub(/ \|$/,"",$7);
	printf "| phase1 %s, cache on tmpfs | %s (script %s, ratio %s) | %s (script %s) | %s kernel requests/iface |\n", $1, $2, $3, $4, $5, $6, $7}'
awk -F' \\| ' '{gsub(/^\| /,"",$1); gsub(/ \|$/,"",$7);
	printf "| phase1 %s, cache on disk (fsync) | %s (script %s, ratio %s) | %s (script %s) | %s kernel requests/iface |\n", $1, $2, $3, $4, $5, $6, $7}' "$tmp/p1-disk"
# peer rows: | version case | ours | KubeVirt | ratio | ApplyNAT | kernel share | requests |
awk -F' \\| ' '{gsub(/^\| /,"",$1); gsub(/ \|$/,"",$7); v=$1; sub(/ .*/,"",v); sub(/^[^ ]* /,"",$1);
	printf "| phase1 %s vs KubeVirt " v ", cache on tmpfs | %s (KubeVirt %s, ratio %s) | | ApplyNAT %s, of which kernel (sendmsg) %s; %s kernel requests |\n", $1, $2, $3, $4, $5, $6, $7}' "$tmp/peer"
while read -r name iters rest; do
	ns=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="ns/op") print $i}' <<<"$rest")
	allocs=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="allocs/op") print $i}' <<<"$rest")
	bytes=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="B/op") print $i}' <<<"$rest")
	heap=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="heap-inuse-B") print $i}' <<<"$rest")
	growth=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="heap-growth-B") print $i}' <<<"$rest")
	cpu=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="cpu-ns/op") print $i}' <<<"$rest")
	kernel=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="kernel-ns/op") print $i}' <<<"$rest")
	overhead=$(awk '{for (i=1;i<NF;i++) if ($(i+1)=="overhead-x") print $i}' <<<"$rest")
	name=${name%-*}
	per="" notes=""
	case $name in
	*Render64 | *Load64) per=$(awk -v n="$ns" 'BEGIN{printf "%.1f µs", n/64/1000}') ;;
	*Render1) per=$(awk -v n="$ns" 'BEGIN{printf "%.1f µs", n/1000}') ;;
	esac
	[ -n "$allocs" ] && notes="$allocs allocs/op, $bytes B/op"
	[ -n "$cpu" ] && notes="$notes, CPU $(awk -v n="$cpu" 'BEGIN{printf "%.1f", n/1000}') µs/op"
	[ -n "$kernel" ] && notes="kernel (the batch's sendmsg) $(awk -v n="$kernel" 'BEGIN{printf "%.1f", n/1000}') µs/op; ApplyNAT/kernel $overhead"
	[ -n "$heap" ] && notes="heap in use after $iters exchanges: $((heap / 1024)) KiB (growth $growth B)"
	printf '| %s | %s µs/op | %s | %s |\n' "$name" "$(awk -v n="$ns" 'BEGIN{printf "%.1f", n/1000}')" "$per" "$notes"
done <"$tmp/go"
# | BenchmarkCNIProcess/<plugin> | ADD | DEL |, | BenchmarkCNIStartup | per binary: VERSION process | init |
metric() { awk -v m="$1" '{for (i=1;i<NF;i++) if ($(i+1)==m) printf "%.2f", $i/1e6}'; }
while read -r name _ rest; do
	name=${name%-*}
	case $name in
	*CNIProcess*)
		printf '| CNI %s (median of 21 fresh pods) | ADD %s ms | DEL %s ms | whole process: exec, init, verb, exit |\n' \
			"${name#*/}" "$(metric add-ns/op <<<"$rest")" "$(metric del-ns/op <<<"$rest")"
		echo "${name#*/} $(metric add-ns/op <<<"$rest") $(metric del-ns/op <<<"$rest")" >>"$tmp/cni-verbs" ;;
	*CNIStartup*)
		for p in empty bridge virtnet-binding-cni macvtap; do
			printf '| CNI %s start-up | VERSION %s ms | package init %s ms | GODEBUG=inittrace=1, %s B allocated by init |\n' \
				"$p" "$(metric "$p-version-ns/op" <<<"$rest")" "$(metric "$p-init-ns/op" <<<"$rest")" \
				"$(awk -v m="$p-init-B/op" '{for (i=1;i<NF;i++) if ($(i+1)==m) print $i}' <<<"$rest")"
			echo "$p $(metric "$p-init-ns/op" <<<"$rest")" >>"$tmp/cni-init"
		done ;;
	esac
done <"$tmp/cni"

# One line per goal of the benchmarks, with its baseline of the same run:
# BENCH <name> <value> <unit> (<baseline name> <value> <unit>).
echo
field() { awk -v k="$2" '$1==k{print $'"$3"'}' "$1"; }
empty=$(field "$tmp/cni-init" empty 2)
for p in virtnet-binding-cni macvtap; do
	echo "BENCH cni-init-$p $(field "$tmp/cni-init" "$p" 2) ms (empty-go-program $empty ms)"
done
# | case | ours | script | ratio | ...
awk -F' \\| ' '{gsub(/ ms/,""); print "BENCH phase1-process " $2 " ms (script " $3 " ms)"}' "$tmp/p1-process"
kib() { awk -v m="$1" '{for (i=1;i<NF;i++) if ($(i+1)==m) printf "%.1f", $i/1024}' "$tmp/sidecar"; }
echo "BENCH sidecar-rss $(kib rss1000-KiB) MB (sidecar-rss-idle $(kib idle-rss-KiB) MB)"
echo "BENCH sidecar-rss-anon $(kib anon1000-KiB) MB (sidecar-rss-anon-idle $(kib idle-anon-KiB) MB)"
echo "BENCH sidecar-rss-settled $(kib settled1000-KiB) MB (sidecar-rss-idle $(kib idle-rss-KiB) MB)"
perCall() { awk -v m="$1" '{for (i=1;i<NF;i++) if ($(i+1)==m) printf "%.0f", $i}' "$tmp/sidecar"; }
echo "BENCH sidecar-rss-growth $(perCall growth-B/call) B/call (flat 0 B/call)"
echo "BENCH sidecar-rss-anon-growth $(perCall anon-growth-B/call) B/call (flat 0 B/call)"
hp() { metric "$1" <"$tmp/hotplug"; }
echo "BENCH hotplug-phase1 $(hp plug-ns/op) ms (vm-start-phase1 $(hp start-ns/op) ms)"
echo "BENCH hotplug-phase1-unplug $(hp unplug-ns/op) ms (vm-start-phase1 $(hp start-ns/op) ms)"
if [ -n "${MIGRATION_LOG:-}" ]; then
	# "... UDP probe 146ms (...); QEMU's reported downtime 184 ms; ..."
	sed -n 's/.*FIGURE migration.*UDP probe \([0-9.]*\)\(m\{0,1\}s\) .*reported downtime \([0-9]*\) ms.*/\1 \2 \3/p' "$MIGRATION_LOG" |
		awk '{print ($2 == "s" ? $1 * 1000 : $1), $3}' >"$tmp/migration"
	n=$(wc -l <"$tmp/migration")
	if [ "$n" -gt 0 ]; then
		mid=$(((n + 1) / 2))
		echo "BENCH migration-downtime $(cut -d' ' -f1 "$tmp/migration" | sort -n | sed -n "${mid}p") ms" \
			"(qemu-reported-downtime $(cut -d' ' -f2 "$tmp/migration" | sort -n | sed -n "${mid}p") ms) median of $n migrations"
		# The goal: the gap above QEMU's own figure, run by run.
		echo "BENCH migration-downtime-above-qemu $(awk '{print $1 - $2}' "$tmp/migration" | sort -n | sed -n "${mid}p") ms" \
			"(goal 50 ms) median of $n migrations"
	fi
fi
ref=bridge-reference ours=virtnet-binding-cni-masquerade
echo "BENCH cni-add $(field "$tmp/cni-verbs" $ours 2) ms ($ref $(field "$tmp/cni-verbs" $ref 2) ms)"
node() { awk -v p="$1" -v m="$2" '$1 ~ "/"p"-[0-9]+$" {for (i=1;i<NF;i++) if ($(i+1)==m) printf "%.2f", $i/1e6}' "$tmp/cninode"; }
for v in add-p50 add-p99 check-p50 check-p99 del-p50 del-p99; do
	echo "BENCH cni-100pods-$v $(node $ours "$v-ns") ms ($ref $(node $ref "$v-ns") ms)"
done
echo "BENCH cni-100pods-gc $(node $ours gc-ns) ms ($ref $(node $ref gc-ns) ms)"
echo "BENCH cni-del $(field "$tmp/cni-verbs" $ours 3) ms ($ref $(field "$tmp/cni-verbs" $ref 3) ms)"
