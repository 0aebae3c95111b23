//go:build !race

package e2e

// raceDetector: this test binary was built with -race.
const raceDetector = false
