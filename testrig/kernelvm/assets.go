//go:build linux

package kernelvm

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Environment variables read by this package.
const (
	// EnvDir overrides the asset directory (default
	// $HOME/.cache/virtnet/kernelvm), as for scripts/kernelvm-assets.sh.
	EnvDir = "VIRTNET_KERNELVM_DIR"
	// EnvInVM is set to "1" for the test binary inside the VM; [Delegate]
	// returns false there.
	EnvInVM = "VIRTNET_IN_KERNELVM"
	// EnvTimeout overrides the VM timeout (a Go duration, default 5m).
	EnvTimeout = "VIRTNET_KERNELVM_TIMEOUT"
	// EnvQEMU overrides the QEMU binary (default qemu-system-x86_64 in PATH).
	EnvQEMU = "VIRTNET_KERNELVM_QEMU"
	// EnvForce set to "1" makes [Delegate] boot a VM even when this kernel
	// supports every need (to test the runner itself).
	EnvForce = "VIRTNET_KERNELVM_FORCE"
	// EnvRequireKernel is passed through to the VM: with it set to 1 a
	// skip inside the VM is a failure, as outside.
	EnvRequireKernel = "VIRTNET_REQUIRE_KERNEL"
	// EnvHostRoot is set to "1" for a test binary running chrooted into
	// the host's read-only root ([Options].HostRoot).
	EnvHostRoot = "VIRTNET_KERNELVM_HOSTROOT"
)

const assetsScript = "scripts/kernelvm-assets.sh"

// assets is a prepared asset directory (see scripts/kernelvm-assets.sh).
type assets struct {
	dir     string
	kernel  string // vmlinux (PVH boot) if the directory has it, else vmlinuz
	busybox string
	version string
	// deps maps a module name to the modules it depends on.
	deps map[string][]string
}

// assetDir returns the asset directory named by the environment.
func assetDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "virtnet", "kernelvm")
}

// loadAssets checks and reads the asset directory.
func loadAssets(dir string) (*assets, error) {
	hint := "run " + assetsScript + " " + dir
	for _, f := range []string{"COMPLETE", "vmlinuz", "busybox", "modules.dep", "VERSION"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, &UnavailableError{Missing: "kernel VM asset " + filepath.Join(dir, f), Hint: hint}
		}
	}
	a := &assets{
		dir:     dir,
		kernel:  filepath.Join(dir, "vmlinuz"),
		busybox: filepath.Join(dir, "busybox"),
	}
	// The uncompressed ELF boots through its PVH entry point and skips
	// the bzImage's self-decompression, seconds under TCG.
	if vmlinux := filepath.Join(dir, "vmlinux"); fileExists(vmlinux) {
		a.kernel = vmlinux
	}
	v, err := os.ReadFile(filepath.Join(dir, "VERSION"))
	if err != nil {
		return nil, &UnavailableError{Missing: "kernel VM asset " + filepath.Join(dir, "VERSION"), Hint: hint, Err: err}
	}
	a.version = strings.TrimSpace(string(v))
	f, err := os.Open(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return nil, &UnavailableError{Missing: "kernel VM asset " + filepath.Join(dir, "modules.dep"), Hint: hint, Err: err}
	}
	defer func() { _ = f.Close() }()
	a.deps, err = parseModulesDep(bufio.NewScanner(f))
	if err != nil {
		return nil, fmt.Errorf("kernelvm: %s/modules.dep: %w", dir, err)
	}
	return a, nil
}

// parseModulesDep reads lines "name: dep1 dep2".
func parseModulesDep(sc *bufio.Scanner) (map[string][]string, error) {
	deps := map[string][]string{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d %q: want \"name: deps...\"", n, line)
		}
		deps[name] = strings.Fields(rest)
	}
	return deps, sc.Err()
}

// loadOrder returns mods and everything they depend on, each after its
// dependencies, in a stable order.
func loadOrder(deps map[string][]string, dir string, mods []string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(m string) error
	visit = func(m string) error {
		switch state[m] {
		case 2:
			return nil
		case 1:
			return fmt.Errorf("kernelvm: module dependency cycle at %q in %s/modules.dep", m, dir)
		}
		ds, ok := deps[m]
		if !ok {
			return &ModuleError{Module: m, Dir: dir}
		}
		state[m] = 1
		for _, d := range ds {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[m] = 2
		order = append(order, m)
		return nil
	}
	for _, m := range mods {
		if err := visit(m); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// qemuPath finds the QEMU binary.
func qemuPath() (string, error) {
	name := os.Getenv(EnvQEMU)
	if name == "" {
		name = "qemu-system-x86_64"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", &UnavailableError{Missing: name + " in PATH", Hint: "apt-get install -y qemu-system-x86", Err: err}
	}
	return p, nil
}

// Available reports whether [Delegate] can boot a VM here: nil, or an
// [*UnavailableError] (matching [ErrUnavailable]) naming what is missing:
// root, the QEMU binary or a file of the asset directory.
func Available() error {
	if os.Geteuid() != 0 {
		return &UnavailableError{Missing: "root (needed to probe link types in a throwaway network namespace)"}
	}
	if _, err := qemuPath(); err != nil {
		return err
	}
	_, err := loadAssets(assetDir())
	return err
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}
