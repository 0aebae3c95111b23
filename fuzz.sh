#!/bin/bash
# fuzz.sh [TIME] — runs every fuzz target of the module (every `func FuzzX`
# in a _test.go file) for TIME each (default 30s), one after the other.
# A crasher makes `go test` fail and leaves its input under the package's
# testdata/fuzz/FuzzX/, where plain `go test` replays it from then on.
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")"
time=${1:-30s}
failed=()
while IFS=: read -r file _ line; do
	name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
	pkg=$(dirname "$file")
	echo "=== $pkg $name ($time)"
	if ! go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$time"; then
		failed+=("$pkg $name")
	fi
done < <(grep -rn --include='*_test.go' '^func Fuzz' . | sort)
if ((${#failed[@]})); then
	printf 'FAILED: %s\n' "${failed[@]}"
	exit 1
fi
echo "all fuzz targets ran clean for $time each"
