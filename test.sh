#!/usr/bin/env bash
# test.sh: installs what the test suite needs on a fresh Debian 12 machine
# and runs lint and every test, the privileged ones included. CI runs exactly
# this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

usage() {
	cat <<'USAGE'
Usage: ./test.sh [--no-install] [-h]

Installs the Debian packages the tests need (apt-get), prepares the kernel VM
assets (scripts/kernelvm-assets.sh), checks gofmt, go vet, staticcheck and
go mod tidy, then runs every test twice: with static binaries and under the
race detector. Needs root: run it as root, or as a user with sudo (it
re-runs itself under sudo, keeping PATH so that sudo finds go). It exports
VIRTNET_REQUIRE_KERNEL=1, so a test that cannot run fails instead of
skipping. 20-35 minutes on two cores.

  --no-install   skip apt-get (the packages are already there)
  -h, --help     this text

Without root, the unit tests alone: go test -short ./...
USAGE
}

install=1
for arg in "$@"; do
	case "$arg" in
	--no-install) install=0 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "test.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
	esac
done

if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null; then
		echo "test.sh: the tests create network namespaces and VMs: re-running under sudo" >&2
		exec sudo env "PATH=$PATH" "$0" "$@"
	fi
	echo "test.sh: run as root (the tests create network namespaces and VMs); there is no sudo here" >&2
	echo "test.sh: without root, the unit tests alone: go test -short ./..." >&2
	exit 1
fi

packages=(
	qemu-system-x86 busybox-static xz-utils          # kernel VM runner, udhcpc
	nftables iproute2 ethtool                         # inspection of what phase1 did
	libvirt-clients libxml2-utils                     # virt-xml-validate
	libvirt-daemon-driver-qemu qemu-utils             # virt-qemu-run and qemu-img (end-to-end guest, overlays)
	libvirt-daemon                                    # libvirtd: a private daemon per test (hotplug, live migration)
	ovmf                                              # EFI firmware paths in golden domains
	isc-dhcp-client                                   # dhclient -6 (DHCPv6 test client)
	util-linux                                        # setpriv (the binding sidecar as uid 107 without capabilities)
	ndisc6                                            # rdisc6 (router advertisement receiver)
	passt                                             # e2e TestPasstGuest (passt as uid 107 in the pod)
)

if [[ $install == 1 ]]; then
	export DEBIAN_FRONTEND=noninteractive
	missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if ((${#missing[@]})); then
		apt-get update -q
		apt-get install -y -q "${missing[@]}"
	fi
	getent passwd libvirt-qemu >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin libvirt-qemu
fi
# Also with --no-install: a no-op when the assets match the script, and a
# rebuild when the script changed (its module list, say).
./scripts/kernelvm-assets.sh >/dev/null

export PATH="$PATH:$(go env GOPATH)/bin"
export VIRTNET_REQUIRE_KERNEL=1
go mod download
# TestAPIDiff reads the last release's commit from the history: a shallow
# clone is deepened when a remote can give it (the test skips otherwise).
if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == true ]]; then
	git fetch -q --unshallow 2>/dev/null || echo "test.sh: warning: shallow clone, TestAPIDiff will skip" >&2
fi

echo "== lint"
test -z "$(gofmt -l $(git ls-files '*.go'))" || { gofmt -l $(git ls-files '*.go'); echo "gofmt: files above need formatting" >&2; exit 1; }
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go mod tidy -diff

# What is on the machine before the tests, so that only the suite's own
# leftovers fail it at the end.
leakbase=$(mktemp)
trap 'rm -f "$leakbase"' EXIT
scripts/leakcheck.sh --save "$leakbase"

# e2e boots its guests one after another under TCG: about 19 minutes of one
# package on two cores, so the per-binary limit leaves room above that.
echo "== tests (static binaries: the kernel VM runs them as they are)"
CGO_ENABLED=0 go test -count=1 -timeout 30m ./...

echo "== tests under the race detector"
go test -race -count=1 -timeout 30m ./...

echo "== leftovers (network namespaces, processes, mounts the tests made)"
scripts/leakcheck.sh --since "$leakbase"
