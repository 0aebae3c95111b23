#!/usr/bin/env bash
# Builds virtnet's images, and the two small images a node needs, as OCI
# archives for e2e/node/harness.sh (docs/real-node.md):
#
#   e2e/node/images.sh OUT
#
# OUT/images gets one OCI archive per image, each named inside
# (io.containerd.image.name) so that `ctr -n k8s.io image import` gives it
# its full name:
#   registry.example.org/virtnet/binding-cni:v0.1.0      deploy/Containerfile's cni stage
#   registry.example.org/virtnet/{bridge,masquerade,slirp}-sidecar:v0.1.0
#                                                         its sidecar stage, per BINDING
#   registry.example.org/virtnet/macvtap:v0.1.0          deploy/Containerfile.macvtap
#   registry.local/node/pause:3.10                       the pods' sandbox
#   registry.local/node/busybox:1                        test pods
# The names are deploy/images' (the release in CHANGELOG.md), so that
# `kubectl apply -k deploy/...` runs unchanged. The layout of each image
# follows the Containerfiles; the base is Debian's busybox-static instead of
# docker.io's busybox (no registry is reachable here).
case "${1:-}" in -h | --help | "") sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; [[ -n ${1:-} ]]; exit ;; esac
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "$1")/images
version=$(sed -n 's/^## \(v[0-9]*\.[0-9]*\.[0-9]*\).*/\1/p' "$repo/CHANGELOG.md" | head -1)
busybox=${BUSYBOX:-/bin/busybox}
[[ -x $busybox ]] || { echo "images.sh: $busybox missing (apt-get install busybox-static)" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/virtnet-node-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

# sha FILE: the hex sha256 of FILE.
sha() { sha256sum "$1" | cut -d' ' -f1; }

# oci NAME ROOTFS CONFIG_JSON: writes $out/<basename of NAME's repository, tag>.tar,
# an OCI archive of one layer (ROOTFS, owned by root) with the runtime
# config CONFIG_JSON (the "config" object of an image config).
oci() {
	local name=$1 rootfs=$2 config=$3 d layer diffid lsize cfg csize man msize file
	d=$(mktemp -d "$work/oci.XXXXXX")
	mkdir -p "$d/blobs/sha256"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$rootfs" -cf "$d/layer.tar" .
	diffid=$(sha "$d/layer.tar")
	gzip -n -c "$d/layer.tar" >"$d/layer.tar.gz"
	layer=$(sha "$d/layer.tar.gz") lsize=$(stat -c %s "$d/layer.tar.gz")
	mv "$d/layer.tar.gz" "$d/blobs/sha256/$layer"
	rm "$d/layer.tar"
	printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"virtnet e2e/node/images.sh"}]}' \
		"$config" "$diffid" >"$d/config.json"
	cfg=$(sha "$d/config.json") csize=$(stat -c %s "$d/config.json")
	mv "$d/config.json" "$d/blobs/sha256/$cfg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
		"$cfg" "$csize" "$layer" "$lsize" >"$d/manifest.json"
	man=$(sha "$d/manifest.json") msize=$(stat -c %s "$d/manifest.json")
	mv "$d/manifest.json" "$d/blobs/sha256/$man"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
		"$man" "$msize" "$name" "${name##*:}" >"$d/index.json"
	file=${name##*/}
	file=$out/${file/:/_}.tar
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$d" -cf "$file" oci-layout index.json blobs
	echo "images.sh: $name ($(du -h "$file" | cut -f1), manifest sha256:$man)"
}

# base DIR: a busybox root in DIR (every applet linked, /tmp, a passwd).
base() {
	mkdir -p "$1/bin" "$1/tmp" "$1/etc"
	chmod 1777 "$1/tmp"
	cp "$busybox" "$1/bin/busybox"
	"$busybox" --list | while read -r a; do [[ $a == busybox ]] || ln -sf busybox "$1/bin/$a"; done
	printf 'root:x:0:0:root:/:/bin/sh\nqemu:x:107:107:qemu:/:/bin/false\n' >"$1/etc/passwd"
	printf 'root:x:0:\nqemu:x:107:\n' >"$1/etc/group"
}

# The binaries, as the Containerfiles build them.
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
(
	cd "$repo"
	for c in virtnet-binding-sidecar virtnet-binding-cni virtnet-macvtap-dp; do
		go build -trimpath -o "$work/bin/$c" "./cmd/$c"
	done
	go build -trimpath -o "$work/bin/macvtap" ./cmd/macvtap-cni
)
install_cni() { # PLUGIN: the install-cni script of the Containerfiles
	printf '#!/bin/sh\nset -e\ncp /%s /host/opt/cni/bin/.%s.new\nmv /host/opt/cni/bin/.%s.new /host/opt/cni/bin/%s\necho installed\n' "$1" "$1" "$1" "$1"
}

r=$work/root-cni
base "$r"
cp "$work/bin/virtnet-binding-cni" "$r/"
install_cni virtnet-binding-cni >"$r/install-cni"
chmod +x "$r/install-cni"
oci "registry.example.org/virtnet/binding-cni:$version" "$r" '{"Cmd":["sh"]}'

for b in bridge masquerade slirp; do
	r=$work/root-$b
	mkdir -p "$r"
	cp "$work/bin/virtnet-binding-sidecar" "$r/"
	oci "registry.example.org/virtnet/$b-sidecar:$version" "$r" \
		"{\"User\":\"107:107\",\"Env\":[\"VIRTNET_BINDING_PLUGIN_NAME=virtnet-$b\"],\"Entrypoint\":[\"/virtnet-binding-sidecar\"]}"
done

r=$work/root-macvtap
base "$r"
cp "$work/bin/virtnet-macvtap-dp" "$work/bin/macvtap" "$r/"
install_cni macvtap >"$r/install-cni"
chmod +x "$r/install-cni"
oci "registry.example.org/virtnet/macvtap:$version" "$r" '{"Entrypoint":["/virtnet-macvtap-dp"]}'

r=$work/root-pause
base "$r"
oci registry.local/node/pause:3.10 "$r" \
	'{"Entrypoint":["/bin/sh","-c","trap \"exit 0\" TERM INT; sleep 2147483647 & wait"]}'

r=$work/root-busybox
base "$r"
oci registry.local/node/busybox:1 "$r" '{"Cmd":["sh"]}'
