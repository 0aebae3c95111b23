package apicompat_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// apidiffVersion is golang.org/x/exp's version whose cmd/apidiff the test
// runs (module mode, -m).
const apidiffVersion = "v0.0.0-20261120182113-8801fbdfac81"

// outsidePromise are the top-level folders whose packages are importable
// but outside the compatibility promise (package doc): the KubeVirt
// plugins' logic, which only the module's programs use, and the test rigs.
var outsidePromise = []string{"kubevirt", "testrig"}

// promised drops the changes in the folders of outsidePromise.
func promised(cs []change) []change {
	var out []change
	for _, c := range cs {
		folder, _, _ := strings.Cut(c.Pkg, "/")
		if !slices.Contains(outsidePromise, folder) {
			out = append(out, c)
		}
	}
	return out
}

// release is a "## vX.Y.Z" section of the CHANGELOG.
type release struct {
	Version string
	Commit  string
}

// changelog is what the test reads of CHANGELOG.md.
type changelog struct {
	Next       string    // "## Unreleased (next: v0.2.0)"
	Unreleased string    // the Unreleased section's text
	Releases   []release // newest first
}

var (
	unreleasedRE = regexp.MustCompile(`^## Unreleased \(next: (v\d+\.\d+\.\d+)\)$`)
	releaseRE    = regexp.MustCompile(`^## (v\d+\.\d+\.\d+) — \d{4}-\d{2}-\d{2}$`)
	commitRE     = regexp.MustCompile("^Commit `([0-9a-f]{40})`")
)

// parseChangelog reads the sections the package doc describes.
func parseChangelog(b []byte) (changelog, error) {
	var c changelog
	type section struct {
		head string
		body []string
	}
	var sections []section
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "## ") {
			sections = append(sections, section{head: line})
			continue
		}
		if len(sections) > 0 {
			sections[len(sections)-1].body = append(sections[len(sections)-1].body, line)
		}
	}
	for i, s := range sections {
		if strings.HasPrefix(s.head, "## Unreleased") {
			m := unreleasedRE.FindStringSubmatch(s.head)
			if m == nil || i != 0 {
				return c, fmt.Errorf("CHANGELOG.md: %q: want the first section, headed \"## Unreleased (next: vX.Y.Z)\"", s.head)
			}
			c.Next, c.Unreleased = m[1], strings.Join(s.body, "\n")
			continue
		}
		m := releaseRE.FindStringSubmatch(s.head)
		if m == nil {
			return c, fmt.Errorf("CHANGELOG.md: %q: want \"## vX.Y.Z — YYYY-MM-DD\"", s.head)
		}
		first := ""
		for _, l := range s.body {
			if strings.TrimSpace(l) != "" {
				first = l
				break
			}
		}
		cm := commitRE.FindStringSubmatch(first)
		if cm == nil {
			return c, fmt.Errorf("CHANGELOG.md: %s: the section's first line is %q, want \"Commit `<40 hex digits>` …\"", m[1], first)
		}
		c.Releases = append(c.Releases, release{Version: m[1], Commit: cm[1]})
	}
	if c.Next == "" {
		return c, errors.New("CHANGELOG.md: no \"## Unreleased (next: vX.Y.Z)\" section")
	}
	return c, nil
}

// semver splits "vX.Y.Z".
func semver(v string) [3]int {
	var out [3]int
	for i, p := range strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3) {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}

// checkNext says whether next may follow last, with or without incompatible
// changes in between (before v1 a minor release may break the API).
func checkNext(last, next string, incompatible bool) error {
	l, n := semver(last), semver(next)
	switch {
	case n[0] < l[0] || n[0] == l[0] && (n[1] < l[1] || n[1] == l[1] && n[2] <= l[2]):
		return fmt.Errorf("the next release %s does not follow %s", next, last)
	case !incompatible:
		return nil
	case l[0] == 0 && n[0] == 0 && n[1] == l[1]:
		return fmt.Errorf("the next release %s breaks the Go API of %s: before v1 that takes a new minor version (v0.%d.0)", next, last, l[1]+1)
	case l[0] >= 1 && n[0] == l[0]:
		return fmt.Errorf("the next release %s breaks the Go API of %s: that takes a new major version (v%d.0.0)", next, last, l[0]+1)
	}
	return nil
}

// change is one incompatible change apidiff reports.
type change struct {
	Pkg  string // path relative to the module: "binding/slirp"
	Name string // receivers written as their type: "Store.WriteInterface"
	What string // "removed", "changed from string to net/netip.Addr"
}

// Qualified is the spelling the CHANGELOG must hold.
func (c change) Qualified() string { return filepath.Base(c.Pkg) + "." + c.Name }

var receiverRE = regexp.MustCompile(`\(\*?([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\)`)

// parseReport reads apidiff -m -incompatible's lines
// ("- ./cache.(*Store).WriteInterface: removed").
func parseReport(out string) ([]change, error) {
	var cs []change
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rest, ok := strings.CutPrefix(line, "- ./")
		if !ok {
			return nil, fmt.Errorf("apidiff: unexpected line %q", line)
		}
		name, what, ok := strings.Cut(rest, ": ")
		if !ok {
			return nil, fmt.Errorf("apidiff: unexpected line %q", line)
		}
		dir, base := "", name
		if i := strings.LastIndex(name, "/"); i >= 0 {
			dir, base = name[:i+1], name[i+1:]
		}
		pkg, ident, ok := strings.Cut(base, ".")
		if !ok {
			return nil, fmt.Errorf("apidiff: no package in %q", line)
		}
		cs = append(cs, change{Pkg: dir + pkg, Name: receiverRE.ReplaceAllString(ident, "$1"), What: what})
	}
	return cs, nil
}

func isIdent(r byte) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}

// named applies the package doc's rule: text holds c.Qualified() (or its
// module-relative path form, which ends with it after a '/') with no
// identifier character or dot before it and no identifier character after.
func named(text string, c change) bool {
	q := c.Qualified()
	for i := 0; ; {
		j := strings.Index(text[i:], q)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(q)
		before := at == 0 || !isIdent(text[at-1]) && text[at-1] != '.'
		after := end == len(text) || !isIdent(text[end])
		if before && after {
			return true
		}
		i = at + 1
	}
}

// unnamed returns the changes text does not name.
func unnamed(text string, cs []change) []change {
	var out []change
	for _, c := range cs {
		if !named(text, c) {
			out = append(out, c)
		}
	}
	return out
}

func TestParseChangelog(t *testing.T) {
	const hash = "b6b4717bc70c9a7f61a023389140babfca1f0729"
	for _, tc := range []struct {
		name, in string
		want     changelog
		err      string
	}{
		{
			name: "two releases",
			in: "# Changelog\n\nintro\n\n## Unreleased (next: v0.3.0)\n\n- `a.B` gone\n\n## v0.2.0 — 2027-01-02\n\nCommit `" + strings.Repeat("a", 40) +
				"` (no tag).\n\n- x\n\n## v0.1.0 — 2026-12-04\n\nCommit `" + hash + "`.\n",
			want: changelog{Next: "v0.3.0", Unreleased: "\n- `a.B` gone\n", Releases: []release{{"v0.2.0", strings.Repeat("a", 40)}, {"v0.1.0", hash}}},
		},
		{name: "no next version", in: "## Unreleased\n\n## v0.1.0 — 2026-12-04\nCommit `" + hash + "`\n", err: `"## Unreleased": want the first section`},
		{name: "no commit", in: "## Unreleased (next: v0.2.0)\n\n## v0.1.0 — 2026-12-04\n\nThe first release.\n", err: `v0.1.0: the section's first line is "The first release.", want "Commit`},
		{name: "short commit", in: "## Unreleased (next: v0.2.0)\n\n## v0.1.0 — 2026-12-04\n\nCommit `b6b4717`\n", err: "want \"Commit `<40 hex digits>`"},
		{name: "unreleased not first", in: "## v0.1.0 — 2026-12-04\nCommit `" + hash + "`\n## Unreleased (next: v0.2.0)\n", err: "want the first section"},
		{name: "bad release heading", in: "## Unreleased (next: v0.2.0)\n## 0.1.0\n", err: `"## 0.1.0": want "## vX.Y.Z — YYYY-MM-DD"`},
		{name: "no unreleased", in: "## v0.1.0 — 2026-12-04\nCommit `" + hash + "`\n", err: "no \"## Unreleased (next: vX.Y.Z)\" section"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseChangelog([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestPromisedLeavesOutPluginsAndRigs: a change under kubevirt/ or
// testrig/ needs no CHANGELOG line; one in any other folder does.
func TestPromisedLeavesOutPluginsAndRigs(t *testing.T) {
	cs := []change{
		{Pkg: "kubevirt/kvplugin", Name: "Record"},
		{Pkg: "testrig/testutil", Name: "NewNS"},
		{Pkg: "phase1", Name: "Run"},
		{Pkg: "kubevirtish", Name: "X"},
	}
	require.Equal(t, []change{cs[2], cs[3]}, promised(cs))
}

func TestCheckNext(t *testing.T) {
	for _, tc := range []struct {
		last, next   string
		incompatible bool
		err          string
	}{
		{"v0.1.0", "v0.2.0", true, ""},
		{"v0.1.0", "v0.1.1", false, ""},
		{"v0.1.0", "v0.1.1", true, "before v1 that takes a new minor version (v0.2.0)"},
		{"v0.1.0", "v1.0.0", true, ""},
		{"v0.1.0", "v0.1.0", false, "does not follow"},
		{"v0.2.0", "v0.1.9", false, "does not follow"},
		{"v1.2.3", "v1.3.0", true, "new major version (v2.0.0)"},
		{"v1.2.3", "v2.0.0", true, ""},
		{"v1.2.3", "v1.2.4", false, ""},
	} {
		err := checkNext(tc.last, tc.next, tc.incompatible)
		if tc.err == "" {
			require.NoError(t, err, "%s → %s", tc.last, tc.next)
		} else {
			require.ErrorContains(t, err, tc.err, "%s → %s", tc.last, tc.next)
		}
	}
}

func TestNamedRule(t *testing.T) {
	report := "- ./binding/slirp.PortError: removed\n" +
		"- ./cache.(*Store).WriteInterface: removed\n" +
		"- ./cache.Interface.Gateway: changed from string to net/netip.Addr\n" +
		"- ./phase1.TapOwner.String: removed\n" +
		"- ./netdriver.Driver.AddrListFlags: added\n" +
		"- ./phase2/prestart.(*Running).Servers: changed from func() []ServerInfo to func() []ServerInfo\n"
	cs, err := parseReport(report)
	require.NoError(t, err)
	require.Equal(t, []change{
		{"binding/slirp", "PortError", "removed"},
		{"cache", "Store.WriteInterface", "removed"},
		{"cache", "Interface.Gateway", "changed from string to net/netip.Addr"},
		{"phase1", "TapOwner.String", "removed"},
		{"netdriver", "Driver.AddrListFlags", "added"},
		{"phase2/prestart", "Running.Servers", "changed from func() []ServerInfo to func() []ServerInfo"},
	}, cs)
	_, err = parseReport("Incompatible changes:\n")
	require.ErrorContains(t, err, "unexpected line")

	for _, tc := range []struct {
		text string
		want []string // the qualified names left unnamed
	}{
		{"", []string{"slirp.PortError", "cache.Store.WriteInterface", "cache.Interface.Gateway", "phase1.TapOwner.String", "netdriver.Driver.AddrListFlags", "prestart.Running.Servers"}},
		{"`binding/slirp.PortError`, `cache.Store.WriteInterface`. `cache.Interface.Gateway` and phase1.TapOwner.String;\n" +
			"netdriver.Driver.AddrListFlags (prestart.Running.Servers)", nil},
		{"`slirp.PortError` `cache.Interface.GatewayIPv6` `cache.Store.WriteInterfaces` `xphase1.TapOwner.String` `x.netdriver.Driver.AddrListFlags` `prestart.Running.Servers`",
			[]string{"cache.Store.WriteInterface", "cache.Interface.Gateway", "phase1.TapOwner.String", "netdriver.Driver.AddrListFlags"}},
		{"`Store.WriteInterface` `(*Store).WriteInterface` `cache.(*Store).WriteInterface` `TapOwner.String`", []string{"slirp.PortError", "cache.Store.WriteInterface", "cache.Interface.Gateway", "phase1.TapOwner.String", "netdriver.Driver.AddrListFlags", "prestart.Running.Servers"}},
	} {
		var got []string
		for _, c := range unnamed(tc.text, cs) {
			got = append(got, c.Qualified())
		}
		require.Equal(t, tc.want, got, tc.text)
	}
}

// git runs git in dir and returns its standard output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

// goCmd runs the go command in dir with a static build's environment.
func goCmd(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"CGO_ENABLED=0", "GOWORK=off"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s (in %s): %w: %s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}

// extract writes the tree of commit, a commit of this repository (the last
// release of virtnet itself), into dir (git archive).
func extract(ctx context.Context, repo, commit, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(bufio.NewReader(pipe))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("git archive %s: %w", commit, err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return fmt.Errorf("git archive %s: %q leaves the tree", commit, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, os.FileMode(h.Mode)&0o777); err == nil {
				_, err = io.Copy(f, tr)
				err = errors.Join(err, f.Close())
			}
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		}
		if err != nil {
			return fmt.Errorf("git archive %s: %s: %w", commit, h.Name, err)
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %w: %s", commit, err, stderr.Bytes())
	}
	return nil
}

// moduleRoot is the repository's root, two folders up.
func moduleRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	return root
}

const module = "github.com/virtnet/virtnet"

// TestAPIDiff: every incompatible change of the Go API since the last
// release's commit (CHANGELOG.md) is named in "Unreleased", by the rule of
// the package doc, and the next version says the API breaks.
func TestAPIDiff(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	require.NoError(t, err)
	cl, err := parseChangelog(b)
	require.NoError(t, err)
	require.NotEmpty(t, cl.Releases, "CHANGELOG.md names no release")
	last := cl.Releases[0]

	if testing.Short() {
		t.Skip("type-checks the module at two commits with apidiff (-short)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		testutil.Skip(t, "needs git to read "+last.Version+"'s commit")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	if _, err := git(ctx, root, "rev-parse", "--git-dir"); err != nil {
		testutil.Skip(t, fmt.Sprintf("not a git checkout (%v): %s's commit cannot be read", err, last.Version))
	}
	if _, err := git(ctx, root, "cat-file", "-e", last.Commit+"^{commit}"); err != nil {
		shallow, _ := git(ctx, root, "rev-parse", "--is-shallow-repository")
		if shallow == "true" {
			// Not a missing kernel feature: a plain skip even under
			// VIRTNET_REQUIRE_KERNEL (test.sh unshallows the clone first
			// when it can; a full clone, as CI's, runs the check).
			t.Skipf("the clone is shallow and lacks %s's commit %s: git fetch --unshallow", last.Version, last.Commit)
		}
		t.Fatalf("CHANGELOG.md: %s's commit %s is not in the repository: %v", last.Version, last.Commit, err)
	}
	_, err = git(ctx, root, "merge-base", "--is-ancestor", last.Commit, "HEAD")
	require.NoError(t, err, "CHANGELOG.md: %s's commit %s is not an ancestor of HEAD", last.Version, last.Commit)

	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	cache = filepath.Join(cache, "virtnet-apidiff", apidiffVersion, runtime.Version())
	require.NoError(t, os.MkdirAll(cache, 0o755))
	apidiff := filepath.Join(cache, "apidiff")
	if _, err := os.Stat(apidiff); err != nil {
		_, err := goCmd(ctx, root, []string{"GOBIN=" + cache}, "install", "golang.org/x/exp/cmd/apidiff@"+apidiffVersion)
		require.NoError(t, err)
	}
	run := func(dir string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, apidiff, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("apidiff %s (in %s): %w: %s", strings.Join(args, " "), dir, err, stderr.Bytes())
		}
		return string(out), nil
	}

	// The release's export data, once per commit and apidiff version.
	old := filepath.Join(cache, last.Commit+".export")
	if _, err := os.Stat(old); err != nil {
		tree := t.TempDir()
		require.NoError(t, extract(ctx, root, last.Commit, tree))
		f, err := os.CreateTemp(cache, last.Commit+".export.*")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		defer os.Remove(f.Name())
		_, err = run(tree, "-m", "-w", f.Name(), module)
		require.NoError(t, err, "the export data of %s (%s)", last.Version, last.Commit)
		require.NoError(t, os.Rename(f.Name(), old))
	}
	cur := filepath.Join(t.TempDir(), "head.export")
	_, err = run(root, "-m", "-w", cur, module)
	require.NoError(t, err)
	out, err := run(root, "-m", "-incompatible", old, cur)
	require.NoError(t, err)
	changes, err := parseReport(out)
	require.NoError(t, err)
	changes = promised(changes)
	t.Logf("apidiff %s → working tree: %d incompatible changes", last.Version, len(changes))
	for _, c := range changes {
		t.Logf("  %s.%s: %s", c.Pkg, c.Name, c.What)
	}

	if missing := unnamed(cl.Unreleased, changes); len(missing) > 0 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "%d of apidiff's %d incompatible changes since %s (%s) are not named in CHANGELOG.md's Unreleased section; name each as below (package doc: the rule):\n",
			len(missing), len(changes), last.Version, last.Commit[:12])
		for _, c := range missing {
			fmt.Fprintf(&sb, "  %s.%s: %s\n", c.Pkg, c.Name, c.What)
		}
		t.Error(sb.String())
	}
	require.NoError(t, checkNext(last.Version, cl.Next, len(changes) > 0))
}
