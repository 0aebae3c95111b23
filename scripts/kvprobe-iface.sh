#!/usr/bin/env bash
# Dev-time: KubeVirt v1.9.0's own domain for the VMI manifests of
# domxml/testdata/kubevirt-v1.9.0-interfaces (not part of CI; the comparison
# with virtnet's rendering is domxml's TestKubeVirt19Interfaces).
#
#   scripts/kvprobe-iface.sh
#
# KubeVirt's source is read from $KUBEVIRT_SRC (default /work/kv/v1.9.0: `git archive v1.9.0` of
# github.com/kubevirt/kubevirt, commit 79d34c1762169e5b0370ec491cef5ca12e6b504c). The tree is copied
# (hard links) to a temporary directory, scripts/kvprobe-iface/main.go (virtnet's probe, `//go:build ignore`
# here) is dropped into the copy as cmd/virtnet-kvprobe-iface, and built there offline with KubeVirt's
# vendor directory (no cgo: the mutating webhook and the converter only). The probe applies the
# webhook's mutations (a default KubeVirt configuration), sets status.interfaces[].podInterfaceName as
# virt-controller does, registers managed-tap as a managedTap plugin, and writes the converter's domain
# as <manifest>.xml next to each manifest. Nothing of KubeVirt is copied into this repository: only the
# XML it produced.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
kv=${KUBEVIRT_SRC:-/work/kv/v1.9.0}
dir=$repo/domxml/testdata/kubevirt-v1.9.0-interfaces
[ -f "$kv/pkg/virt-launcher/virtwrap/converter/converter.go" ] || {
	echo "no KubeVirt source at $kv (set KUBEVIRT_SRC)" >&2
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-kvprobe-iface.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -al "$kv" "$work/kv"
mkdir -p "$work/kv/cmd/virtnet-kvprobe-iface"
sed '1{/^\/\/go:build ignore$/d}' "$repo/scripts/kvprobe-iface/main.go" | sed '1{/^$/d}' >"$work/kv/cmd/virtnet-kvprobe-iface/main.go"
(cd "$work/kv" && GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$work/probe" ./cmd/virtnet-kvprobe-iface)
"$work/probe" -out "$dir" "$dir"/*.yaml
