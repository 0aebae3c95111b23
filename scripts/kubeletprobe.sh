#!/usr/bin/env bash
# Dev-time: the macvtap device plugin against Kubernetes' own kubelet device manager (not part of CI).
#
#   scripts/kubeletprobe.sh      # build the probe, run it against the daemon, rewrite the transcript
#
# The probe is a module of its own in a temporary directory: it requires k8s.io/kubernetes
# $K8S_VERSION (default v1.37.2, from the Go module proxy; its staging modules at the matching
# v0.x release), vendors it, drops scripts/kubeletprobe/devicemanager_export.go (three one-line
# exports of unexported device-manager functions) into the vendored pkg/kubelet/cm/devicemanager,
# and builds scripts/kubeletprobe/main.go there (offline, -mod=vendor). Nothing of Kubernetes is
# copied into this repository: only the transcript the probe printed.
#
# Output: macvtap/dpserver/testdata/kubelet-$K8S_VERSION/transcript.txt, written by
# TestKubeletDeviceManagerTranscript -kubelet-probe (it also checks the transcript, as CI does
# with the committed one).
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
k8s=${K8S_VERSION:-v1.37.2}
staging=v0.${k8s#v1.}
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-kubeletprobe.XXXXXX")
trap 'rm -rf "$work"' EXIT
strip() { sed '1{/^\/\/go:build ignore$/d}' "$1" | sed '1{/^$/d}'; }

cd "$work"
GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$k8s" >download.json
moddir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' download.json)
{
	printf 'module virtnet.probe/kubelet\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$k8s"
	# Every staging module that k8s.io/kubernetes replaces with ./staging/...
	sed -n 's#^\t\(k8s.io/[a-z-]*\) => ./staging/src/.*#\1#p' "$moddir/go.mod" |
		while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
	printf ')\n'
} >go.mod
strip "$repo/scripts/kubeletprobe/main.go" >main.go
GOFLAGS=-mod=mod go mod tidy
GOFLAGS=-mod=mod go mod vendor
strip "$repo/scripts/kubeletprobe/devicemanager_export.go" >vendor/k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/zz_virtnet_probe.go
GOFLAGS=-mod=vendor GOTOOLCHAIN=local CGO_ENABLED=0 go build -ldflags "-X main.kubernetesVersion=$k8s" -o "$work/kubeletprobe" .

cd "$repo"
CGO_ENABLED=0 go test -count=1 ./macvtap/dpserver -run 'TestKubeletDeviceManagerTranscript' -v \
	-kubelet-probe "$work/kubeletprobe" -kubelet-version "$k8s"
