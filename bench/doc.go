// Package bench holds virtnet's comparison benchmarks: the shell scripts
// a user would write instead of phase1 (bridge.sh, masquerade.sh) and
// cmd/phase1bench, which times both in the same run; ../bench.sh runs
// them with the Go benchmarks and prints one table.
package bench
