#!/usr/bin/env bash
# Dev-time: test data produced by KubeVirt v1.9.0's own functions (not part of CI).
#
#   scripts/kvprobe1x.sh
#
# KubeVirt's source is read from $KUBEVIRT_SRC (default /work/kv/v1.9.0: `git archive v1.9.0` of
# github.com/kubevirt/kubevirt, commit 79d34c1762169e5b0370ec491cef5ca12e6b504c). The tree is copied
# (hard links) to a temporary directory, scripts/kvprobe1x/*.go (virtnet's probe, `//go:build ignore`
# here) become cmd/virtnet-kvprobe1x there, and the probe is built offline with KubeVirt's vendor
# directory (pure Go). Nothing of KubeVirt is copied into this repository: only the JSON it printed.
#
# Output:
#   internal/names/testdata/kubevirt-v1.9.0-names.json
#       namescheme.HashedPodInterfaceName, namescheme.CreateOrdinalNetworkNameScheme,
#       link.GenerateBridgeName, link.GenerateNewBridgedVmiInterfaceName, link.GenerateTapDeviceName
#   phase2/testdata/status/<case>/kubevirt-v1.9.0.json
#       pkg/network/setup NetStat.UpdateStatus on the case's vmi.json, domain.xml, podcache.json and
#       guest-agent.json (see phase2/testdata/status/README.md)
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
kv=${KUBEVIRT_SRC:-/work/kv/v1.9.0}
[ -f "$kv/pkg/network/namescheme/networknamescheme.go" ] || {
	echo "no KubeVirt source at $kv (set KUBEVIRT_SRC)" >&2
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-kvprobe1x.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -al "$kv" "$work/kv"
mkdir -p "$work/kv/cmd/virtnet-kvprobe1x"
for f in "$repo"/scripts/kvprobe1x/*.go; do
	sed '1{/^\/\/go:build ignore$/d}' "$f" >"$work/kv/cmd/virtnet-kvprobe1x/$(basename "$f")"
done
(cd "$work/kv" && GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$work/kvprobe1x" ./cmd/virtnet-kvprobe1x)

"$work/kvprobe1x" -mode names >"$repo/internal/names/testdata/kubevirt-v1.9.0-names.json"
for d in "$repo"/phase2/testdata/status/*/; do
	[ -f "$d/vmi.json" ] || continue
	"$work/kvprobe1x" -mode status -dir "$d" >"$d/kubevirt-v1.9.0.json"
done
echo "written: internal/names/testdata, phase2/testdata/status" >&2
