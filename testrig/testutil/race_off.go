//go:build !race

package testutil

// raceEnabled: this binary was built with -race.
const raceEnabled = false
