package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

func TestVersionOf(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged main module", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.2.0"}}, "v0.2.0"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.0.0-20261203234206-edada8a1b2c3+dirty"}},
			"v0.0.0-20261203234206-edada8a1b2c3+dirty"},
		{"dependency of a launcher", debug.BuildInfo{Main: debug.Module{Path: "example.com/launcher", Version: "v1.0.0"},
			Deps: []*debug.Module{{Path: "golang.org/x/net", Version: "v0.63.0"}, {Path: ModulePath, Version: "v0.3.1"}}}, "v0.3.1"},
		{"replaced dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/launcher"},
			Deps: []*debug.Module{{Path: ModulePath, Version: "v0.3.1", Replace: &debug.Module{Path: "../virtnet", Version: ""}}}}, "v0.3.1"},
		{"devel with revision", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "edada8a1b2c3d4e5f6"}, {Key: "vcs.modified", Value: "true"}}},
			"devel-edada8a1b2c3+dirty"},
		{"nothing recorded", debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}}, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, versionOf(&tt.bi))
		})
	}
}

// TestEveryBinaryVersion builds every program of the module as a user
// does (go build in the checkout) and asks each for its version: a flag
// program and a CNI plugin print the same line, and a CNI plugin's
// about string (CNI_COMMAND unset) carries it too.
func TestEveryBinaryVersion(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "its time goes to go build and the programs it builds, which the race detector does not see")
	if testing.Short() {
		t.Skip("builds every binary of the module (-short)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out, err := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}", root+"/...").Output()
	require.NoError(t, err)
	mains := strings.Fields(string(out))
	require.NotEmpty(t, mains)
	bin := t.TempDir()
	build := exec.Command("go", append([]string{"build", "-buildvcs=auto", "-o", bin + "/"}, mains...)...)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)

	// In a git checkout the go command stamps a pseudo-version or a tag
	// (-buildvcs=auto, the go command's default, which a GOFLAGS of
	// -buildvcs=false would turn off); elsewhere "devel".
	versionRe := `(v\d+\.\d+\.\d+\S*|devel(-[0-9a-f]{12}(\+dirty)?)?)`
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		versionRe = `v\d+\.\d+\.\d+\S*`
	}
	for _, p := range mains {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, name), "--version")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.Output()
			require.NoError(t, err)
			require.Regexp(t, regexp.MustCompile(`^`+regexp.QuoteMeta(name)+` `+versionRe+` \(virtnet, go\S+\)\n$`), string(out))
			require.NotContains(t, string(out), "(devel)")
			if strings.HasSuffix(name, "-cni") {
				// skel prints the about string when CNI_COMMAND is unset.
				about := exec.Command(filepath.Join(bin, name))
				about.Env = []string{"PATH=/usr/bin:/bin"}
				b, _ := about.CombinedOutput()
				require.Contains(t, string(b), strings.TrimSuffix(string(out), "\n"))
			}
		})
	}
}
