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

// floors gives each top-level folder of the module its floor, lowest
// first (see the package doc). Every package under a folder stands on
// the folder's floor.
var floors = map[string]int{
	"internal": 0,

	"api":       1,
	"cache":     1,
	"netdriver": 1,
	"macvtap":   1,

	"domxml": 2,

	"binding": 3,

	"phase1":    4,
	"phase2":    4,
	"migration": 4,

	"kubevirt": 5,

	"cmd":      6,
	"examples": 6,
	"bench":    6,
	"deploy":   6,

	"testrig":     7,
	"reliability": 7,
	"e2e":         7,
}

// folderOf returns the top-level folder of a package path relative to
// the module.
func folderOf(rel string) string {
	folder, _, _ := strings.Cut(rel, "/")
	return folder
}

// upward returns every import, of imports (package → its imports, paths
// relative to the module), that leaves its top-level folder for one that
// is not on a lower floor, and every package whose folder has no floor.
// Two folders on one floor do not import each other: a floor is a set of
// neighbours that stand on what is below them.
func upward(imports map[string][]string) (up, unplaced []string) {
	for _, pkg := range slices.Sorted(maps.Keys(imports)) {
		from, ok := floors[folderOf(pkg)]
		if !ok {
			unplaced = append(unplaced, pkg)
			continue
		}
		for _, imp := range imports[pkg] {
			if folderOf(imp) == folderOf(pkg) {
				continue
			}
			to, ok := floors[folderOf(imp)]
			if !ok {
				unplaced = append(unplaced, imp)
				continue
			}
			if to >= from {
				up = append(up, fmt.Sprintf("%s (%s/, floor %d) imports %s (%s/, floor %d)", pkg, folderOf(pkg), from, imp, folderOf(imp), to))
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
	cmd.Dir = "../.."
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

// TestFloors: every top-level folder of the module has a floor, and its
// packages import from other folders only on lower floors, on Linux and on another OS (the
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

// TestUpwardFound: the check finds an import that runs up, one between
// two folders of a floor, and a package without a floor; imports within a
// folder are the folder's own business.
func TestUpwardFound(t *testing.T) {
	up, unplaced := upward(map[string][]string{
		"internal/names":  {"api", "internal/errclass"},
		"phase1":          {"binding", "testrig/testutil"},
		"phase2":          {"phase1"},
		"macvtap":         {"macvtap/plugin"},
		"nowhere/pkg":     nil,
		"internal/nsexec": nil,
	})
	require.Equal(t, []string{
		"internal/names (internal/, floor 0) imports api (api/, floor 1)",
		"phase1 (phase1/, floor 4) imports testrig/testutil (testrig/, floor 7)",
		"phase2 (phase2/, floor 4) imports phase1 (phase1/, floor 4)",
	}, up)
	require.Equal(t, []string{"nowhere/pkg"}, unplaced)
}
