package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestDocumentedCommands runs every command of the package doc (doc.go)
// as written, in order, from the repository's root, with two
// substitutions only: the test's own pod namespace for "pod" and a
// temporary directory for /tmp. Each succeeds and prints a domain (or,
// with -plan, the diagram); the -cache run after the -netns one renders
// the records phase1 left there.
func TestDocumentedCommands(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	pod := testutil.NewPod(t)
	tmp := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))
	n := 0
	for line := range strings.Lines(string(src)) {
		args, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "//\tgo run ./examples/virtnet-xml")
		if !ok {
			continue
		}
		n++
		args, _, _ = strings.Cut(args, "#")
		args = strings.ReplaceAll(args, "/tmp/", tmp+"/")
		fields := strings.Fields(args)
		for i := range fields {
			if i > 0 && fields[i-1] == "-netns" && fields[i] == "pod" {
				fields[i] = pod.Pod.Name
			}
		}
		t.Logf("$ virtnet-xml %s", strings.Join(fields, " "))
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), fields, &out, &errb), "stderr:\n%s", errb.String())
		if strings.Contains(args, "-plan") {
			require.Contains(t, out.String(), `[0] interface "default"`)
			require.NotContains(t, out.String(), "not discovered", "the records of a real phase1")
			continue
		}
		var dom libvirtxml.Domain
		require.NoError(t, dom.Unmarshal(out.String()), "stdout:\n%s", out.String())
		require.NotEmpty(t, dom.Devices.Interfaces)
	}
	require.Equal(t, 5, n, "the doc's commands")
}

// TestNetnsNeedsCache: -netns without -cache is refused before anything
// runs (exit 2, naming -cache): a temporary cache would be deleted on
// exit, leaving the namespace prepared with no record for the next run or
// phase1.Cleanup.
func TestNetnsNeedsCache(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"-netns", "virtnet-no-such-ns"}, &out, &errb))
	require.Contains(t, errb.String(), "-netns needs -cache DIR")
	require.Empty(t, out.String())
}
