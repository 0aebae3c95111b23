#!/usr/bin/env bash
# Builds the parts of a real node that come from the Go module proxy, for
# e2e/node/harness.sh (docs/real-node.md):
#
#   e2e/node/build-k8s.sh OUT
#
# OUT/bin gets kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet and kubectl of k8s.io/kubernetes $K8S_VERSION (default v1.34.4: the
# last minor release whose kubelet still starts on a cgroup v1 host), and
# multus (the thin plugin) of Multus $MULTUS_VERSION (default v4.2.3), with
# kube-proxy; OUT/multus its manifest (for the CRD); OUT/cni-bin the CNI
# reference plugins (bridge, host-local, loopback) of virtnet's go.mod.
# Kubernetes is built as a dependency of a temporary module that requires
# k8s.io/kubernetes and points each staging module it replaces at the
# matching v0.x release; nothing of it is copied into this repository.
# KubeVirt is not built here: see docs/real-node.md.
case "${1:-}" in -h | --help | "") sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; [[ -n ${1:-} ]]; exit ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "$1")
k8s=${K8S_VERSION:-v1.34.4}
multus=${MULTUS_VERSION:-v4.2.3}
staging=v0.${k8s#v1.}
mkdir -p "$out/bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-node-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# Kubernetes.
mkdir "$work/k8s"
cd "$work/k8s"
go mod download -json "k8s.io/kubernetes@$k8s" >download.json
moddir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' download.json)
{
	printf 'module virtnet.node/k8s\n\ngo 1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$k8s"
	sed -n 's#^\t\(k8s.io/[a-z-]*\) => ./staging/src/.*#\1#p' "$moddir/go.mod" |
		while read -r m; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
	printf ')\n'
} >go.mod
cat >tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
ldflags="-X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$k8s" | cut -d. -f2)"
go mod tidy
go build -trimpath -ldflags "-s -w $ldflags" -o "$out/bin/" \
	k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl \
	k8s.io/kubernetes/cmd/kube-proxy
echo "build-k8s: Kubernetes $k8s"

# Multus thin plugin.
mkdir "$work/multus"
cd "$work/multus"
printf 'module virtnet.node/multus\n\ngo 1.24\n\nrequire gopkg.in/k8snetworkplumbingwg/multus-cni.v4 %s\n' "$multus" >go.mod
printf '//go:build tools\n\npackage tools\n\nimport _ "gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus"\n' >tools.go
go mod tidy
go build -trimpath -ldflags "-s -w -X gopkg.in/k8snetworkplumbingwg/multus-cni.v4/pkg/multus.version=$multus" \
	-o "$out/bin/" gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus
mdir=$(go list -m -f '{{.Dir}}' gopkg.in/k8snetworkplumbingwg/multus-cni.v4)
# The NetworkAttachmentDefinition CRD, the one document of Multus' manifest the harness applies.
mkdir -p "$out/multus"
cp "$mdir/deployments/multus-daemonset.yml" "$out/multus/"
chmod u+w "$out/multus/multus-daemonset.yml"
echo "build-k8s: Multus $multus"

# The CNI reference plugins, at the version virtnet's go.mod requires.
cd "$repo"
go build -trimpath -o "$out/cni-bin/" github.com/containernetworking/plugins/plugins/main/bridge \
	github.com/containernetworking/plugins/plugins/ipam/host-local \
	github.com/containernetworking/plugins/plugins/main/loopback
echo "build-k8s: CNI plugins $(go list -m -f '{{.Version}}' github.com/containernetworking/plugins)"
{
	echo "kubernetes $k8s"
	echo "multus $multus"
	go version
} >"$out/bin/VERSIONS"
