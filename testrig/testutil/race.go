package testutil

import (
	"os"
	"testing"
)

// RaceSkipCoveredEnv is the environment variable test.sh sets to 1 for its
// second pass, the one under the race detector: there [SkipCoveredUnderRace]
// skips the tests the first pass already ran whose re-run under -race
// checks nothing new.
const RaceSkipCoveredEnv = "VIRTNET_RACE_SKIP_COVERED"

// SkipCoveredUnderRace skips tb when this test binary was built with -race
// and VIRTNET_RACE_SKIP_COVERED=1, saying why the race pass need not run it
// (covered names the tests that run the same Go code under -race, or says
// that its time goes to programs and kernels the race detector does not
// see). Anywhere else it does nothing: a plain go test -race runs every
// test. It is a plain skip, not [Skip]: VIRTNET_REQUIRE_KERNEL=1 does not
// turn it into a failure, as the pass without -race runs the test.
func SkipCoveredUnderRace(tb testing.TB, covered string) {
	tb.Helper()
	if raceEnabled && os.Getenv(RaceSkipCoveredEnv) == "1" {
		tb.Skipf("%s=1 (the race pass): %s; the pass without -race runs it", RaceSkipCoveredEnv, covered)
	}
}
