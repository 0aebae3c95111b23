package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/internal/testutil"
)

// dhcp6cEnv names a built dhcp6c (./internal/dhcp6c) that the guests
// use as their DHCPv6 client; a test delegated to the kernel VM gets it
// from the host, which built it where the VM sees the host's root.
const dhcp6cEnv = "VIRTNET_E2E_DHCP6C"

// guestDHCP6Client returns the path of a static build of
// ./internal/dhcp6c: $VIRTNET_E2E_DHCP6C when set, else a build under the
// user's cache directory (not /tmp: the kernel VM has its own), removed
// when the test ends. Without the go command it skips.
func guestDHCP6Client(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(dhcp6cEnv); p != "" {
		return p
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		testutil.Skip(t, "the go command in PATH, to build the guests' DHCPv6 client (or "+dhcp6cEnv+" naming a built one)")
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	base := filepath.Join(cache, "virtnet")
	require.NoError(t, os.MkdirAll(base, 0o755))
	dir, err := os.MkdirTemp(base, "e2e-dhcp6c-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	out := filepath.Join(dir, "dhcp6c")
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, "./internal/dhcp6c")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./internal/dhcp6c: %s", b)
	return out
}
