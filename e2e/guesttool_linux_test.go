package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// guestToolEnv names a built guesttool (./internal/guesttool: the
// guests' DHCPv6 client and `ping -M do`); a test delegated to the kernel
// VM gets it from the host, which built it where the VM sees the host's
// root.
const guestToolEnv = "VIRTNET_E2E_GUESTTOOL"

// guestTool returns the path of a static build of
// ./internal/guesttool: $VIRTNET_E2E_GUESTTOOL when set, else a build under the
// user's cache directory (not /tmp: the kernel VM has its own), removed
// when the test ends. Without the go command it skips.
func guestTool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(guestToolEnv); p != "" {
		return p
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		testutil.Skip(t, "the go command in PATH, to build the guests' guesttool (or "+guestToolEnv+" naming a built one)")
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	base := filepath.Join(cache, "virtnet")
	require.NoError(t, os.MkdirAll(base, 0o755))
	dir, err := os.MkdirTemp(base, "e2e-guesttool-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out := filepath.Join(dir, "guesttool")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "./internal/guesttool")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./internal/guesttool: %s", b)
	return out
}
