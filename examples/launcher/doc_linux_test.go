package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestDocumentedCommands runs every command of the package doc (doc.go)
// as written, from the repository's root, with two substitutions only:
// the test's own pod namespace for "pod" and a temporary directory for
// /tmp. A go run line runs the launcher in-process; a command that does
// not end (no -once) is stopped once it serves DHCP, as Ctrl-C would.
func TestDocumentedCommands(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	pod := testutil.NewPod(t)
	tmp := t.TempDir()
	t.Chdir(filepath.Join("..", ".."))
	launches := 0
	for line := range strings.Lines(string(src)) {
		cmd, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "//\t")
		if !ok || strings.HasPrefix(cmd, " ") || !strings.ContainsAny(cmd, "-/") {
			continue
		}
		cmd = strings.ReplaceAll(cmd, "/tmp/", tmp+"/")
		t.Logf("$ %s", cmd)
		args, ok := strings.CutPrefix(cmd, "go run ./examples/launcher ")
		if !ok {
			out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
			require.NoError(t, err, "%s", out)
			continue
		}
		launches++
		fields := strings.Fields(args)
		for i := range fields {
			if i > 0 && fields[i-1] == "-netns" && fields[i] == "pod" {
				fields[i] = pod.Pod.Name
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb syncBuffer
		code := make(chan int, 1)
		go func() { code <- run(ctx, fields, &out, &errb) }()
		serves := !strings.Contains(args, "-once")
		if serves {
			require.Eventually(t, func() bool { return strings.Contains(errb.String(), "serving DHCP") }, time.Minute, 50*time.Millisecond,
				"stderr:\n%s", errb.String())
			cancel()
		}
		select {
		case c := <-code:
			require.Equal(t, 0, c, "stderr:\n%s", errb.String())
		case <-time.After(2 * time.Minute):
			t.Fatal("the launcher did not stop")
		}
		cancel()
		t.Logf("stderr:\n%s", errb.String())
		xml := out.String()
		for i, f := range fields {
			if f == "-o" {
				b, err := os.ReadFile(fields[i+1])
				require.NoError(t, err)
				xml = string(b)
			}
		}
		var dom libvirtxml.Domain
		require.NoError(t, dom.Unmarshal(xml), "the domain XML:\n%s", xml)
		require.Len(t, dom.Devices.Interfaces, 1)
		if serves {
			// Undo phase1 as the next documented command (-cleanup) would
			// have nothing to do with this VMI's pod.
			var o, e syncBuffer
			require.Equal(t, 0, run(context.Background(), append(fields, "-once", "-cleanup"), &o, &e), "%s", e.String())
		}
	}
	require.Equal(t, 2, launches, "the doc's launcher commands")
}
