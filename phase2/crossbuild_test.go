package phase2_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/typecheck"
)

// crossTargets are the platforms TestBuildsOnEveryOS builds for: one per
// branch of the module's build constraints that Linux does not take (unix
// but not Linux, unix without flock, not unix). Each is type-checked from
// source with its build constraints (typecheck.For), not compiled:
// a pure Go package that type-checks for a platform compiles for it. VIRTNET_CROSS_TARGETS=all builds one architecture of every GOOS
// `go tool dist list` names (all fifteen of Go 1.26 pass).
var crossTargets = []string{"darwin/arm64", "aix/ppc64", "windows/amd64"}

// TestBuildsOnEveryOS: a launcher on any OS Go supports renders domain XML
// with phase2 and domxml (records are read there too; only a Linux node
// writes them, so file locks and O_DIRECT report ErrUnsupported or false
// elsewhere).
func TestBuildsOnEveryOS(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "type checking for other platforms; nothing of it runs")
	if testing.Short() {
		t.Skip("-short: cross-compiles the standard library for several platforms")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	targets := crossTargets
	if os.Getenv("VIRTNET_CROSS_TARGETS") == "all" {
		out, err := exec.Command("go", "tool", "dist", "list").Output()
		require.NoError(t, err)
		targets = nil
		seen := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			if goos := strings.SplitN(p, "/", 2)[0]; !seen[goos] {
				seen[goos] = true
				targets = append(targets, p)
			}
		}
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	for _, target := range targets {
		goos, goarch, _ := strings.Cut(target, "/")
		typecheck.For(t, root, goos, goarch, "./phase2", "./domxml")
	}
}
