package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// CNIPluginDirEnv names a directory that already holds the CNI reference
// plugin binaries ([CNIPlugins]); when it is set, [CNIPluginDir] uses it
// and builds nothing. Tests delegated to the kernel VM get it pointing at
// the host's build through the VM's share of the host root.
const CNIPluginDirEnv = "VIRTNET_CNI_PLUGIN_DIR"

// cniPluginModule is the module of the reference plugins; its version is
// the one go.mod pins (its tool directives name the packages below).
const cniPluginModule = "github.com/containernetworking/plugins"

// CNIPlugins are the reference plugins the harness builds: the main
// plugins it configures pods with, the IPAM plugin they delegate to, and
// the loopback plugin a container runtime runs for "lo".
func CNIPlugins() []string { return []string{"bridge", "ptp", "host-local", "loopback"} }

// cniPluginPackage is the Go package of a plugin binary.
func cniPluginPackage(name string) string {
	if name == "host-local" {
		return cniPluginModule + "/plugins/ipam/" + name
	}
	return cniPluginModule + "/plugins/main/" + name
}

// CNIPluginDir returns a directory holding static builds of [CNIPlugins]
// at the version go.mod pins: $VIRTNET_CNI_PLUGIN_DIR when set, else a
// cache directory (under os.UserCacheDir, keyed by the plugin module's
// version and the Go version) that it fills with `go build` on first use.
// Concurrent test binaries serialise on a lock file there; a build is
// moved into place only when complete. Without a Go toolchain it skips
// (see [Skip]).
func CNIPluginDir(tb testing.TB) string {
	tb.Helper()
	if dir := os.Getenv(CNIPluginDirEnv); dir != "" {
		for _, p := range CNIPlugins() {
			if st, err := os.Stat(filepath.Join(dir, p)); err != nil || st.Mode()&0o111 == 0 {
				tb.Fatalf("%s=%s: no executable %s there", CNIPluginDirEnv, dir, p)
			}
		}
		return dir
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		Skip(tb, "the go command in PATH, to build the CNI reference plugins (or "+CNIPluginDirEnv+" naming a directory of built ones)")
	}
	dir, err := buildCNIPlugins(goBin)
	if err != nil {
		tb.Fatalf("testutil: building the CNI plugins: %v", err)
	}
	return dir
}

// buildCNIPlugins builds the plugins into the cache directory, once per
// plugin and Go version.
func buildCNIPlugins(goBin string) (string, error) {
	out, err := exec.Command(goBin, "list", "-m", "-f", "{{.Version}}", cniPluginModule).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s (run inside the virtnet module): %w", cniPluginModule, exitDetail(err))
	}
	version := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "virtnet", "cni-plugins")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	dir := filepath.Join(root, version+"-"+runtime.Version())
	done := filepath.Join(dir, "COMPLETE")
	if fileExists(done) {
		return dir, nil
	}
	lock, err := os.OpenFile(filepath.Join(root, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) }()
	if fileExists(done) { // built by another test binary meanwhile
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-trimpath", "-o", tmp + "/"}
	for _, p := range CNIPlugins() {
		args = append(args, cniPluginPackage(p))
	}
	cmd := exec.Command(goBin, args...)
	// Static binaries: the kernel VM runs them from the host's files.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if err := os.WriteFile(filepath.Join(tmp, "COMPLETE"), []byte(version+" "+runtime.Version()+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir) // an incomplete leftover
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

func exitDetail(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
