package testutil

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Nobody is the uid and gid [RunAs] takes to show what a program does
// without privileges.
const Nobody = 65534

// BuildMain builds the main package of the test's directory with the go
// command into a new directory that every user can enter (removed when the
// test ends), and returns the binary's path. Without go in PATH it skips
// (see [Skip]).
func BuildMain(tb testing.TB, name string) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		Skip(tb, "no go command in PATH to build "+name+" with")
	}
	// Not tb.TempDir(): its parents are 0700, closed to another user.
	dir, err := os.MkdirTemp("", "virtnet-"+name+"-test-")
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(tb, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, name)
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(tb, err, "go build:\n%s", out)
	return bin
}

// RunAs runs bin with args as uid (and gid uid) in dir, with the
// environment env (nil: the test's own), and returns what it printed and
// its exit status; running it as another user needs root. A failure to
// start it fails the test.
func RunAs(tb testing.TB, uid int, dir string, env []string, bin string, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	}
	require.NoError(tb, err, "run %s", bin)
	return o.String(), e.String(), 0
}
