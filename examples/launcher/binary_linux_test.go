package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/internal/testutil"
)

// TestBinary builds the launcher and runs it as a user without
// privileges: it says that root is needed and why, and exits 1; -h exits
// 0 with the usage on stderr.
func TestBinary(t *testing.T) {
	testutil.RequireRoot(t) // to run the binary as another user
	gobin, err := exec.LookPath("go")
	if err != nil {
		testutil.Skip(t, "no go command in PATH to build the example with")
	}
	dir, err := os.MkdirTemp("", "virtnet-launcher-test-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "launcher")
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))

	cmd := exec.Command(bin, "-vmi", vmi, "-netns", "pod", "-dir", filepath.Join(dir, "work"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", stderr.String())
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, stderr.String(), "launcher: needs root: phase1 enters the pod's network namespace")
	require.Contains(t, stderr.String(), "CAP_NET_ADMIN")
	require.Empty(t, stdout.String())

	cmd = exec.Command(bin, "-h")
	stderr.Reset()
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "-h exits 0")
	require.Contains(t, stderr.String(), "Usage of launcher")
}
