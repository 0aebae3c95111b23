// Package typecheck type-checks packages for another platform from source:
// what a cross compilation checks of pure Go, without compiling anything.
//
// A test rig: importable so that every package's tests can use it, outside
// the compatibility promise (testrig/apicompat leaves testrig/ out), never
// imported by product code (testrig/layers).
package typecheck

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// For type-checks the packages patterns name, and every package
// they import, standard library included, from source as `go build` would
// see them for goos/goarch without cgo: the build constraints of that
// platform, every type and every import resolved. It is what a cross
// compilation can get wrong in pure Go, at a fraction of its cost: no code
// is generated, so a fresh machine does not compile the standard library
// once per platform (about 40 s of CPU each). dir is the module's root.
func For(t *testing.T, dir, goos, goarch string, patterns ...string) {
	t.Helper()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedSyntax | packages.NeedTypes,
		Dir:   dir,
		Env:   append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=-mod=mod"),
		Tests: false,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatalf("GOOS=%s GOARCH=%s: loading %s: %v", goos, goarch, strings.Join(patterns, " "), err)
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("%s: %s", p.PkgPath, e))
		}
	})
	if len(errs) > 0 {
		t.Fatalf("GOOS=%s GOARCH=%s: %s does not build:\n%v", goos, goarch, strings.Join(patterns, " "), errors.Join(errs...))
	}
	if len(pkgs) == 0 {
		t.Fatalf("GOOS=%s GOARCH=%s: %s matched no package", goos, goarch, strings.Join(patterns, " "))
	}
}
