#!/usr/bin/env bash
# Dev-time: KubeVirt v1.9.0's own answers on whether a VMI's network lets it migrate (not part of CI).
#
#   scripts/kvmigratable.sh
#
# Runs pkg/network/vmispec VerifyVMIMigratable (what virt-handler's LiveMigratable condition asks of the
# network) on each VMI of migration/testdata/kubevirt-v1.9.0-migratable.in.json, with the binding plugins
# listed there as the KubeVirt CR's, and writes migration/testdata/kubevirt-v1.9.0-migratable.json.
# KubeVirt's source is read from $KUBEVIRT_SRC (default /work/kv/v1.9.0: `git archive v1.9.0` of
# github.com/kubevirt/kubevirt, commit 79d34c1762169e5b0370ec491cef5ca12e6b504c); the tree is copied (hard
# links) to a temporary directory, scripts/kvmigratable/main.go becomes cmd/virtnet-kvmigratable there and is
# built offline with KubeVirt's vendor directory (pure Go, about a minute). Only its output is committed.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
kv=${KUBEVIRT_SRC:-/work/kv/v1.9.0}
[ -f "$kv/pkg/network/vmispec/interface.go" ] || {
	echo "no KubeVirt source at $kv (set KUBEVIRT_SRC)" >&2
	exit 1
}
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-kvmigratable.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -al "$kv" "$work/kv"
mkdir -p "$work/kv/cmd/virtnet-kvmigratable"
sed '1{/^\/\/go:build ignore$/d}' "$repo/scripts/kvmigratable/main.go" >"$work/kv/cmd/virtnet-kvmigratable/main.go"
(cd "$work/kv" && GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=0 go build -o "$work/kvmigratable" ./cmd/virtnet-kvmigratable)
"$work/kvmigratable" "$repo/migration/testdata/kubevirt-v1.9.0-migratable.in.json" >"$repo/migration/testdata/kubevirt-v1.9.0-migratable.json"
echo "written: migration/testdata/kubevirt-v1.9.0-migratable.json" >&2
