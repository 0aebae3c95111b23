// Command testreport reads the JSON stream of go test -json (cmd/test2json's
// events) and tells where the suite's time went. test.sh runs it for both of
// its passes:
//
//	go test -json ./... | testreport follow -o static.json
//	testreport table -wall static=412 -wall race=388 static.json race.json
//
// follow copies the stream to the -o file, event for event, and prints what
// plain go test prints without -v: one line per package (ok, FAIL, or no
// test files, with its time), build errors, and the whole output of every
// test that failed or was still running when its package ended (a panic, a
// timeout). Passing tests' logs stay in the file. Its exit status is 1 when
// a package or a test failed, so that a caller may check it as well as go
// test's own.
//
// table prints, from one or more saved streams, the slowest top-level tests
// (-n, 15 by default) with their pass (the file's name without .json),
// package, seconds and result; the slowest packages; and per pass the wall
// time the caller measured (-wall pass=seconds, go test's compile time
// included), the sum of the packages' times, and the count of packages and
// of tests run, passed, failed and skipped. Figures of a stream cut short
// (the suite stopped) are what it holds: a test without an end is listed as
// "running" with the time up to the stream's last event.
//
// The program needs nothing but the standard library (no jq), so that a
// fresh machine with Go runs it.
package main
