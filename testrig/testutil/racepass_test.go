package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRacePassPackages: the packages test.sh's race pass leaves out
// (race_skip) exist, each alternative of the pattern names at least one,
// and each is a test-only package or a test rig under testrig,
// never a package of the library: the race pass drops no library code's
// own tests.
func TestRacePassPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: lists the module's packages with the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		Skip(t, "needs the go command")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(root, "test.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^race_skip='([^']+)'$`).FindSubmatch(script)
	require.NotNil(t, m, "test.sh sets race_skip='…' on a line of its own")
	skip, err := regexp.Compile(string(m[1]))
	require.NoError(t, err, "race_skip")

	cmd := exec.Command(gobin, "list", "-json=ImportPath,GoFiles,TestGoFiles,XTestGoFiles", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	type pkg struct {
		ImportPath                         string
		GoFiles, TestGoFiles, XTestGoFiles []string
	}
	var skipped []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		require.NoError(t, dec.Decode(&p))
		if skip.MatchString(p.ImportPath) {
			skipped = append(skipped, p)
		}
	}
	require.NotEmpty(t, skipped)
	for _, p := range skipped {
		rig := strings.Contains(p.ImportPath, "/testrig/")
		require.True(t, rig || len(p.GoFiles) == 0, "%s is left out of the race pass but has library code: %v", p.ImportPath, p.GoFiles)
		require.NotEmpty(t, append(p.TestGoFiles, p.XTestGoFiles...), "%s: left out of the race pass but has no tests (drop it from race_skip)", p.ImportPath)
	}
	// Each name in the pattern's alternatives matches a package: a
	// renamed package leaves no stale entry behind.
	for _, name := range regexp.MustCompile(`[a-z][a-z0-9/]*`).FindAllString(string(m[1]), -1) {
		name = strings.Trim(name, "/")
		if name == "testrig" {
			continue // the group's prefix
		}
		found := false
		for _, p := range skipped {
			found = found || strings.HasSuffix(p.ImportPath, "/"+name)
		}
		require.True(t, found, "race_skip names %q, which matches no package", name)
	}
}
