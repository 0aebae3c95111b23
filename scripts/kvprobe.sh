#!/usr/bin/env bash
# Dev-time: the sidecar's KubeVirt test data, produced by KubeVirt's own code (not part of CI).
#
#   scripts/kvprobe.sh            # build the probe, render the domains, record the hook manager transcripts
#
# KubeVirt's source is read from $KUBEVIRT_SRC (default /work/kv/v1.9.0: `git archive v1.9.0` of
# github.com/kubevirt/kubevirt, commit 79d34c1762169e5b0370ec491cef5ca12e6b504c). The tree is copied
# (hard links) to a temporary directory, scripts/kvprobe/*.go (virtnet's probe, `//go:build ignore` here)
# are dropped into the copy (a main in cmd/virtnet-kvprobe, two one-line exports of unexported KubeVirt
# functions in pkg/hooks and pkg/virt-launcher/virtwrap), and the probe is built there offline with
# KubeVirt's vendor directory (needs cgo and libvirt-dev: virtwrap links libvirt). Nothing of KubeVirt
# is copied into this repository: only the XML, JSON and gRPC bytes it produced.
#
# Output, cmd/virtnet-binding-sidecar/testdata/kubevirt-v1.9.0/ (see its README.md):
#   domain-<v>.xml, vmi-<v>.json   the converter's domain and the VMI JSON virt-launcher hands to hooks
#   hooks-<p>/                     KubeVirt's hook manager against the sidecar binary (as root: it runs
#                                  TestKubeVirtHookManager with -kubevirt-probe, in network namespaces)
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
kv=${KUBEVIRT_SRC:-/work/kv/v1.9.0}
out=$repo/cmd/virtnet-binding-sidecar/testdata/kubevirt-v1.9.0
[ -f "$kv/pkg/hooks/manager.go" ] || {
	echo "no KubeVirt source at $kv (set KUBEVIRT_SRC)" >&2
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-kvprobe.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -al "$kv" "$work/kv"
mkdir -p "$work/kv/cmd/virtnet-kvprobe"
strip() { sed '1{/^\/\/go:build ignore$/d}' "$1" | sed '1{/^$/d}'; }
strip "$repo/scripts/kvprobe/main.go" >"$work/kv/cmd/virtnet-kvprobe/main.go"
strip "$repo/scripts/kvprobe/hooks_export.go" >"$work/kv/pkg/hooks/zz_virtnet_probe.go"
strip "$repo/scripts/kvprobe/virtwrap_export.go" >"$work/kv/pkg/virt-launcher/virtwrap/zz_virtnet_probe.go"
(cd "$work/kv" && GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=1 go build -o "$work/kvprobe" ./cmd/virtnet-kvprobe)

mkdir -p "$out"
for p in bridge masquerade slirp; do
	"$work/kvprobe" -mode convert -plugin "virtnet-$p" -name "$p" -out "$out"
done
"$work/kvprobe" -mode convert -plugin virtnet-bridge -secondary -name bridge-secondary -out "$out"
(cd "$repo" && go test -count=1 ./cmd/virtnet-binding-sidecar -run 'TestKubeVirtHookManager' -kubevirt-probe "$work/kvprobe")
echo "written: $out" >&2
