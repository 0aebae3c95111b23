// Package buildinfo says which release of virtnet a binary was built from.
//
// The version comes from the Go build information alone, so a plain
// `go build` or `go install` stamps it and no linker flag is needed: a
// tagged release's module version (v0.2.0), the pseudo-version the go
// command derives from the git checkout it builds in (since Go 1.24:
// v0.0.0-20261203234206-edada8a1b2c3, with +dirty for uncommitted changes),
// or, where neither is recorded (go run, a build outside git), the VCS
// revision or "devel".
package buildinfo

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

// ModulePath is virtnet's module path.
const ModulePath = "github.com/virtnet/virtnet"

// Version returns the version of virtnet linked into this binary.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := ""
	if bi.Main.Path == ModulePath {
		v = bi.Main.Version
	} else {
		for _, d := range bi.Deps {
			if d.Path == ModulePath {
				v = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					v = d.Replace.Version
				}
			}
		}
	}
	if v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return "devel-" + rev
}

// About is the one line a binary prints for --version and a CNI plugin
// gives skel as its about string: the program, virtnet's version and the
// Go release it was built with.
func About(program string) string {
	return fmt.Sprintf("%s %s (virtnet, %s)", program, Version(), runtime.Version())
}

// HandleVersionFlag prints About(program) on stdout and exits when the
// first argument is --version or -version. CNI plugins, which take no
// flags (their input is the environment and stdin), call it before
// handing over to skel; programs with a flag set register VersionFlag.
func HandleVersionFlag(program string) {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(About(program))
		os.Exit(0)
	}
}
