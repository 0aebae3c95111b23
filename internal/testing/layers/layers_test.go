package layers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/virtnet/virtnet"

// floor places the packages whose path is path or, when tree is set,
// under path too. The longest matching path wins.
type floor struct {
	path  string
	tree  bool
	level int
}

// floors, lowest first (see the package doc).
var floors = []floor{
	{path: "internal", tree: true, level: 0},

	{path: "api", level: 1},
	{path: "cache", level: 1},
	{path: "netdriver", level: 1},
	{path: "macvtap", level: 1},

	{path: "domxml", tree: true, level: 2},
	{path: "netdriver/kernel", tree: true, level: 2},
	{path: "netdriver/intercept", tree: true, level: 2},
	{path: "netdriver/netdrivertest", tree: true, level: 2},
	{path: "macvtap/cniconfig", tree: true, level: 2},
	{path: "macvtap/deviceplugin", tree: true, level: 2},

	{path: "binding", tree: true, level: 3},

	{path: "phase1", tree: true, level: 4},
	{path: "phase2", tree: true, level: 4},
	{path: "migration", tree: true, level: 4},
	{path: "macvtap/dpserver", tree: true, level: 4},
	{path: "macvtap/plugin", tree: true, level: 4},

	{path: "internal/kubevirt", tree: true, level: 5},

	{path: "cmd", tree: true, level: 6},
	{path: "examples", tree: true, level: 6},
	{path: "bench", tree: true, level: 6},
	{path: "deploy", tree: true, level: 6},

	{path: "internal/testing", tree: true, level: 7},
	{path: "reliability", tree: true, level: 7},
	{path: "e2e", tree: true, level: 7},
}

// floorOf returns the floor of a package path relative to the module.
func floorOf(rel string) (floor, bool) {
	var best floor
	found := false
	for _, f := range floors {
		if rel == f.path || (f.tree && strings.HasPrefix(rel, f.path+"/")) {
			if !found || len(f.path) > len(best.path) {
				best, found = f, true
			}
		}
	}
	return best, found
}

// upward returns every import, of imports (package → its imports, paths
// relative to the module), from a package to one on a higher floor, and
// every package no floor places.
func upward(imports map[string][]string) (up, unplaced []string) {
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		from, ok := floorOf(pkg)
		if !ok {
			unplaced = append(unplaced, pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			to, ok := floorOf(imp)
			if !ok {
				unplaced = append(unplaced, imp)
				continue
			}
			if to.level > from.level {
				up = append(up, fmt.Sprintf("%s (floor %d) imports %s (floor %d)", pkg, from.level, imp, to.level))
			}
		}
	}
	slices.Sort(unplaced)
	return up, slices.Compact(unplaced)
}

// moduleImports lists, with go list -deps for goos, every package of the
// module (test files left out) and its imports from the module.
func moduleImports(t *testing.T, goos string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Imports,Module", "./...")
	cmd.Dir = "../../.."
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOFLAGS=-buildvcs=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Module     *struct{ Path string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		imports[rel] = nil
		for _, imp := range p.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports[rel] = append(imports[rel], strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
	}
	return imports
}

// TestFloors: every package of the module has a floor and imports only
// from its own floor or lower ones, on Linux and on another OS (the
// non-Linux files import differently).
func TestFloors(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			imports := moduleImports(t, goos)
			require.Contains(t, imports, "phase1", "go list found the module's packages")
			up, unplaced := upward(imports)
			require.Empty(t, unplaced, "packages no floor places: add them to floors")
			require.Empty(t, up, "imports from a lower floor to a higher one")
		})
	}
}

// TestUpwardFound: the check finds an import that runs up, and a package
// without a floor.
func TestUpwardFound(t *testing.T) {
	up, unplaced := upward(map[string][]string{
		"internal/names": {"api"},
		"phase1":         {"binding", "internal/testing/testutil"},
		"nowhere":        nil,
	})
	require.Equal(t, []string{
		"internal/names (floor 0) imports api (floor 1)",
		"phase1 (floor 4) imports internal/testing/testutil (floor 7)",
	}, up)
	require.Equal(t, []string{"nowhere"}, unplaced)
}
