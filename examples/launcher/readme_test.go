package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestReadmeOnePathCompiles builds the README's one path (its two Go
// blocks, as written) in a new module that requires this one, as a
// launcher author copying it would: the names, the fields and the calls
// it shows exist and fit together. Only the placeholders the README
// leaves to the reader are declared around it (ctx, vmCtx, manifest, log,
// liveDomainXML, apply).
func TestReadmeOnePathCompiles(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "its time goes to go build of a module outside this one; nothing of it runs")
	if testing.Short() {
		t.Skip("builds a module: not in -short")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## The one path")
	require.True(t, ok)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, 2)
	require.Len(t, blocks, 2)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goLine := regexp.MustCompile(`(?m)^go .*$`).Find(gomod)

	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("go.mod", "module example.com/mylauncher\n\n"+string(goLine)+"\n\nrequire github.com/virtnet/virtnet v0.0.0\n\nreplace github.com/virtnet/virtnet => "+root+"\n")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(sum))
	write("main.go", `package main

import (
	"context"
	"log/slog"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/prestart"
)

func onePath(ctx, vmCtx context.Context, manifest []byte, log *slog.Logger, liveDomainXML string, apply func(phase2.Op, string)) error {
`+blocks[0][1]+blocks[1][1]+`
	_, _ = xml, changes
	return err
}

func main() {}
`)
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's one path does not build:\n%s\n%s", out, blocks[0][1]+blocks[1][1])
}
