package provenance_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The patterns are built from pieces so that this file does not match
// them itself.
var (
	// devPath is the root of a development machine's checkouts.
	devPath = "/" + "work" + "/"
	// kubevirtModule is KubeVirt's Go module: importing it builds its code.
	kubevirtModule = "kubevirt.io/" + "kubevirt"
	// treeMarkers are what a script or document that extracts or builds a
	// KubeVirt tree says: the variable the removed scripts read, and an
	// archive of a repository next to KubeVirt's name.
	srcVariable = "KUBEVIRT_" + "SRC"
	gitArchive  = "git " + "archive"
)

// committedFiles lists the files git tracks, relative to the module root.
func committedFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: the committed files cannot be listed")
	}
	out, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not a git checkout: the committed files cannot be listed")
	}
	root = strings.TrimSpace(string(out))
	out, err = exec.Command(git, "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err)
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	require.NotEmpty(t, files)
	return root, files
}

// TestNoKubeVirtBuild fails on a committed file that holds a development
// machine's path, on a committed Go file that imports KubeVirt's module
// (or a go.mod that requires it), and on a committed file that extracts or
// builds a KubeVirt tree (the source-tree variable the removed scripts
// read, or an archive of a repository within two lines of KubeVirt's name).
func TestNoKubeVirtBuild(t *testing.T) {
	root, files := committedFiles(t)
	var problems []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet committed
		}
		require.NoError(t, err)
		if bytes.IndexByte(data, 0) >= 0 {
			continue // binary
		}
		problems = append(problems, check(f, data)...)
	}
	require.Empty(t, problems, "KubeVirt's code is run outside the repository; only its output is committed, with its provenance in words")
}

// check returns what is wrong with one committed text file.
func check(name string, data []byte) []string {
	var problems []string
	text := string(data)
	if i := strings.Index(text, devPath); i >= 0 {
		problems = append(problems, name+": a development machine's path ("+excerpt(text, i)+")")
	}
	if i := strings.Index(text, srcVariable); i >= 0 {
		problems = append(problems, name+": names the variable of a KubeVirt source tree ("+excerpt(text, i)+")")
	}
	lines := strings.Split(text, "\n")
	for n, line := range lines {
		if !strings.Contains(line, gitArchive) {
			continue
		}
		near := strings.ToLower(strings.Join(lines[max(0, n-2):min(len(lines), n+3)], "\n"))
		if strings.Contains(near, "kubevirt") {
			problems = append(problems, name+": extracts a tree next to KubeVirt's name ("+strconv.Quote(strings.TrimSpace(line))+")")
		}
	}
	switch {
	case strings.HasSuffix(name, ".go"):
		f, err := parser.ParseFile(token.NewFileSet(), name, data, parser.ImportsOnly)
		if err != nil {
			return append(problems, name+": "+err.Error())
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if isKubeVirtModule(path) {
				problems = append(problems, name+": imports "+path)
			}
		}
	case filepath.Base(name) == "go.mod":
		for _, line := range strings.Split(text, "\n") {
			if slices.ContainsFunc(strings.Fields(line), isKubeVirtModule) {
				problems = append(problems, name+": requires "+strings.TrimSpace(line))
			}
		}
	}
	return problems
}

// isKubeVirtModule reports whether path is KubeVirt's module or one of its
// packages (kubevirt.io/api, its API types module, is another module).
func isKubeVirtModule(path string) bool {
	return path == kubevirtModule || strings.HasPrefix(path, kubevirtModule+"/")
}

// excerpt is the line around text[i].
func excerpt(text string, i int) string {
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		end = len(text) - i
	}
	line := strings.TrimSpace(text[start : i+end])
	if len(line) > 120 {
		line = line[:120] + "…"
	}
	return strconv.Quote(line)
}

// TestCheck: each rule finds what it is for and nothing else.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		bad              bool
	}{
		{"machine path", "docs/x.md", "built in " + devPath + "kv/v1.9.0", true},
		{"source variable", "bench.sh", "for src in ${" + srcVariable + ":-}; do", true},
		{"archive of KubeVirt", "docs/x.md", gitArchive + " v1.9.0 of https://github.com/kubevirt/kubevirt", true},
		{"archive of KubeVirt, next line", "docs/x.md", "from `" + gitArchive + " v0.53.2` of\nhttps://github.com/kubevirt/kubevirt", true},
		{"archive of our own history", "scripts/apidiff.sh", gitArchive + " HEAD | tar -x", false},
		{"archive of our own history, KubeVirt further on", "docs/x.md", gitArchive + " HEAD\n\n\n\nKubeVirt's answers", false},
		{"import", "x.go", "package x\nimport _ \"" + kubevirtModule + "/pkg/network/setup\"\n", true},
		{"import of the API module", "x.go", "package x\nimport _ \"" + kubevirtModule + "\"\n", true},
		{"other import", "x.go", "package x\nimport _ \"kubevirt.io/api/core/v1\"\n", false},
		{"go.mod", "go.mod", "module m\nrequire (\n\t" + kubevirtModule + " v1.9.0\n)\n", true},
		{"provenance in words", "README.md", "KubeVirt v1.9.0 (commit 79d34c1), run outside this repository", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check(tc.file, []byte(tc.text))
			if tc.bad {
				require.NotEmpty(t, got)
			} else {
				require.Empty(t, got)
			}
		})
	}
}
