package testutil

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSkipCoveredUnderRace: the helper skips only with
// VIRTNET_RACE_SKIP_COVERED=1 and only in a -race build (this test runs in
// both passes of test.sh, so each branch is taken).
func TestSkipCoveredUnderRace(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantSkip bool
	}{
		{"", false},
		{"0", false},
		{"1", raceEnabled},
	} {
		t.Setenv(RaceSkipCoveredEnv, tc.env)
		ran := false
		t.Run("env="+tc.env, func(t *testing.T) {
			SkipCoveredUnderRace(t, "covered by TestSkipCoveredUnderRace itself")
			ran = true
		})
		require.Equal(t, !tc.wantSkip, ran, "%s=%q, race build %v", RaceSkipCoveredEnv, tc.env, raceEnabled)
	}
}
