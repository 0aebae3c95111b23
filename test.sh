#!/usr/bin/env bash
# test.sh: installs what the test suite needs on a fresh Debian 12 machine
# and runs lint and every test, the privileged ones included. CI runs exactly
# this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

usage() {
	cat <<'USAGE'
Usage: ./test.sh [--no-install] [--json DIR] [-h]

Installs the Debian packages the tests need (apt-get), prepares the kernel VM
assets (scripts/kernelvm-assets.sh), checks gofmt, go vet, staticcheck and
go mod tidy, then runs every test twice: with static binaries and under the
race detector, and every benchmark once. Needs root: run it as root, or as
a user with sudo (it re-runs itself under sudo, keeping PATH so that sudo
finds go). It exports
VIRTNET_REQUIRE_KERNEL=1, so a test that cannot run fails instead of
skipping. At the end it prints the 15 slowest tests and each pass's time,
passed or failed, and fails when the suite (lint to leak check, the
installs not counted) ran past its budget: 20 minutes, or
VIRTNET_TEST_BUDGET_MINUTES (0: no limit). The goal is 15 (#37); CI
measured 12.75 minutes at the landing of the relayed guests. See
docs/testing.md.

  --no-install   skip apt-get (the packages are already there)
  --json DIR     keep each pass's go test -json stream as DIR/static.json,
                 DIR/bench.json and DIR/race.json (every test's log, passing
                 ones too)
  -h, --help     this text

Without root, the unit tests alone: go test -short ./...
USAGE
}

install=1 json_dir=
args=("$@")
while (($#)); do
	case "$1" in
	--no-install) install=0 ;;
	--json)
		[[ $# -ge 2 && -n $2 ]] || { echo "test.sh: --json needs a directory" >&2; usage >&2; exit 2; }
		json_dir=$(realpath -m "$2")
		shift
		;;
	-h | --help) usage; exit 0 ;;
	*) echo "test.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
budget_min=${VIRTNET_TEST_BUDGET_MINUTES:-20}
[[ $budget_min =~ ^[0-9]+$ ]] || { echo "test.sh: VIRTNET_TEST_BUDGET_MINUTES=$budget_min: want a whole number of minutes (0: no limit)" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null; then
		echo "test.sh: the tests create network namespaces and VMs: re-running under sudo" >&2
		exec sudo env "PATH=$PATH" ${VIRTNET_TEST_BUDGET_MINUTES:+"VIRTNET_TEST_BUDGET_MINUTES=$VIRTNET_TEST_BUDGET_MINUTES"} "$0" "${args[@]}"
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

# The report: each pass's go test -json stream goes through testreport,
# which prints what go test prints without -v (each package's line, the
# whole output of a failing test) and keeps the stream; at the end, passed
# or failed, the table of the slowest tests and the time of each pass.
work=$(mktemp -d)
jsondir=${json_dir:-$work}
mkdir -p "$jsondir"
go build -o "$work/testreport" ./testrig/testreport
streams=() walls=()
# cpu_now VAR: sets VAR to the CPU seconds (user + system) of every
# process this script waited for, their children included (bash's times,
# run in this shell: a $(...) subshell would count only its own).
cpu_now() {
	times >"$work/times"
	printf -v "$1" '%s' "$(awk 'NR == 2 { s = 0
		for (i = 1; i <= NF; i++) { split($i, a, "m"); s += a[1] * 60 + a[2] }
		printf "%d", s }' "$work/times")"
}
suite_start=$(date +%s)
cpu_now suite_cpu0
finish() {
	local rc=$? elapsed
	trap - EXIT
	elapsed=$(($(date +%s) - suite_start))
	if ((${#streams[@]})); then
		echo "== where the time went"
		"$work/testreport" table -trim "$(go list -m)/" "${walls[@]}" "${streams[@]}" || true
		[[ -n $json_dir ]] && echo "go test -json streams: ${streams[*]}"
	fi
	cpu_now suite_cpu1
	echo "== suite: ${elapsed}s from lint to leak check, $((suite_cpu1 - suite_cpu0)) CPU-seconds of every process (user and system; budget $((budget_min * 60))s of wall; docs/testing.md)"
	if ((budget_min > 0 && elapsed > budget_min * 60)); then
		echo "test.sh: the suite ran $((elapsed / 60))m$((elapsed % 60))s, past its budget of ${budget_min} min:" \
			"see the slowest tests above (VIRTNET_TEST_BUDGET_MINUTES=0 turns the guard off)" >&2
		((rc != 0)) || rc=1
	fi
	rm -rf "$work" "${leakbase:-}"
	exit "$rc"
}
trap finish EXIT

# gotest PASS ARGS...: go test -json ARGS through testreport, the stream
# kept as PASS.json, the pass's wall time for the table.
gotest() {
	local name=$1 t0 rc=0
	shift
	t0=$(date +%s)
	streams+=("$jsondir/$name.json")
	go test -json "$@" | "$work/testreport" follow -o "$jsondir/$name.json" || rc=$?
	walls+=(-wall "$name=$(($(date +%s) - t0))")
	return "$rc"
}

echo "== lint"
lint_t0=$(date +%s)
# CGO_ENABLED=0 here as in the static pass (virtnet is pure Go): go vet
# then compiles every dependency in the configuration the tests reuse
# from the build cache, not once more with cgo (a cold cache: the static
# pass's compile 132 s → 83 s on two cores). The race pass takes the go
# command's own default back.
cgo_default=$(go env CGO_ENABLED)
export CGO_ENABLED=0
test -z "$(gofmt -l $(git ls-files '*.go'))" || { gofmt -l $(git ls-files '*.go'); echo "gofmt: files above need formatting" >&2; exit 1; }
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go mod tidy -diff
echo "== lint: $(($(date +%s) - lint_t0))s (gofmt, go vet, staticcheck, go mod tidy)"

# What is on the machine before the tests, so that only the suite's own
# leftovers fail it at the end.
leakbase=$(mktemp)
scripts/leakcheck.sh --save "$leakbase"

# e2e boots its guests under TCG, two kernel VMs at a time (go test's
# -parallel), the longest package by far: it is named first so that go
# test starts it first (go test starts packages in the order of its
# arguments, ./... sorted by path), and the other packages run beside it. The per-binary limit leaves room above
# e2e's time on two cores.
echo "== tests (static binaries: the kernel VM runs them as they are)"
gotest static -count=1 -timeout 30m ./e2e/... ./...

# Every benchmark runs once, so that none rots (./bench.sh gives the
# figures). A pass of its own: with -bench, go test runs its test binaries
# one at a time, so in the pass above it kept every package waiting for
# e2e. Only the packages that have benchmarks: no binary linked for none.
# -short: a benchmark may run smaller here (BenchmarkCNINode: 20 pods,
# not 100), as this pass checks only that each still runs.
echo "== benchmarks, once each"
mapfile -t benchpkgs < <(git grep -l '^func Benchmark' -- '*_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')
gotest bench -count=1 -short -run '^$' -bench . -benchtime 1x -timeout 10m "${benchpkgs[@]}"

# The race pass skips, with VIRTNET_RACE_SKIP_COVERED=1, the tests that
# call testutil.SkipCoveredUnderRace; the static pass above runs every one.
# Kernel VM tests whose Go code is sequential netlink work, run under -race
# on this kernel by another test (named in each skip): binding/bridge's
# TestCleanupRestoresExactly and TestGuestRouting, binding/macvtap's
# TestMacvtapChainInVM, virtnet-binding-cni's TestBridgeThroughLibcniInVM,
# the sidecar's TestSidecarBridgeInVM and TestSidecarBridgeStatusMACInVM,
# deploy's TestBridgeNADInVM, macvtap/plugin's TestMacvtapPluginInVM,
# phase1's TestBridgeIPAMKernel, reliability's TestSIGKILLAtEveryStepMacvtap,
# cloudinit's TestKernelMount, kernelvm's TestMacvtapOnDummyInVM and
# TestHostRootInVM: under -race each runs a race-built binary under TCG,
# 3-9 times slower, and finds nothing new. Tests whose time goes to go
# build or type checking, which the race detector does not see:
# buildinfo's TestEveryBinaryVersion, examples/launcher's TestBinary and
# TestReadmeOnePathCompiles, examples/virtnet-xml's TestBinary and
# TestUnprivileged, phase2's TestBuildsOnEveryOS; and testutil's
# TestCNIShapes (the rig every kept kernel test uses). e2e's guests skip under -race by
# e2e's own rule. docs/testing.md has the table.
# GORACE=atexit_sleep_ms=0: a race-built program sleeps 1 s before it
# exits by default (time for other goroutines to finish a report); the
# tests run the race-built test binary as the CNI plugin, the sidecar and
# the macvtap programs hundreds of times (TestMasqueradeThroughLibcni: 16 s
# a case, 1.2 s an exec). A race found while the program runs is reported
# when it happens, and a test binary fails its test on it before exiting.
# The race pass leaves out whole packages whose tests check files and
# run none of the module's concurrent code: deploy (manifests through
# kustomize and the API server's decoding, cross-builds of the images'
# binaries, the CNI plugin's sequential ADD/CHECK/DEL that
# cmd/virtnet-binding-cni's TestMasqueradeThroughLibcni runs under -race)
# and the source checkers under testrig (apicompat, layers,
# provenance). deploy alone links 550 of the 740 packages the
# tests need (Kubernetes, kustomize): building them with -race cost 140 s
# of a cold two-core run. TestRacePassPackages keeps this list to
# packages that exist.
race_skip='/(deploy|testrig/(apicompat|layers|provenance))$'
mapfile -t racepkgs < <(go list ./e2e/... ./... | grep -Ev "$race_skip")
echo "== tests under the race detector"
CGO_ENABLED=$cgo_default GORACE=atexit_sleep_ms=0 VIRTNET_RACE_SKIP_COVERED=1 gotest race -race -count=1 -timeout 30m "${racepkgs[@]}"

echo "== leftovers (network namespaces, processes, mounts the tests made)"
scripts/leakcheck.sh --since "$leakbase"
