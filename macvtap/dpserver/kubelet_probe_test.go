package dpserver

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

var (
	kubeletProbe   = flag.String("kubelet-probe", "", "scripts/kubeletprobe.sh's build of Kubernetes' device manager: run it and rewrite testdata/kubelet-<version>/transcript.txt")
	kubeletVersion = flag.String("kubelet-version", "v1.37.2", "the Kubernetes version of -kubelet-probe")
)

// roleFakeDaemon: the test binary, invoked under this name, is the daemon
// with the fake kernel (the host kernel has no macvtap), serving
// $VIRTNET_DP_DIR with $DP_MACVTAP_CONF until SIGTERM.
const roleFakeDaemon = "virtnet-macvtap-dp-fake"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == roleFakeDaemon {
		os.Exit(fakeDaemon())
	}
	os.Exit(m.Run())
}

func fakeDaemon() int {
	conf, err := deviceplugin.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d, err := New(Config{Resources: conf, Kernel: newFakeKernel(), Dir: os.Getenv("VIRTNET_DP_DIR"), PodResourcesSocket: "-",
		Poll: 50 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKubeletDeviceManagerTranscript runs Kubernetes' own kubelet device
// manager against the daemon (scripts/kubeletprobe.sh builds it and passes
// -kubelet-probe), rewrites testdata/kubelet-<version>/transcript.txt and
// checks what the device manager saw: registration with
// capacity 100, an allocation with its tap device and environment, a
// plugin restart and a kubelet restart each followed by re-registration
// and a new allocation, and the device of a deleted pod back in the pool.
func TestKubeletDeviceManagerTranscript(t *testing.T) {
	path := filepath.Join("testdata", "kubelet-"+*kubeletVersion, "transcript.txt")
	// Without the probe there is nothing to run: the committed transcript is a
	// document of a run (its README), not a check a code change could fail.
	// A real kubelet runs the daemon in e2e/node/harness.sh (docs/real-node.md).
	if *kubeletProbe == "" {
		t.Skip("dev-time: needs -kubelet-probe (scripts/kubeletprobe.sh)")
	}
	{
		self, err := os.Executable()
		require.NoError(t, err)
		bin := t.TempDir()
		require.NoError(t, os.Symlink(self, filepath.Join(bin, roleFakeDaemon)))
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, *kubeletProbe, "-dir", dir, "-plugin", filepath.Join(bin, roleFakeDaemon))
		cmd.Env = append(os.Environ(), "VIRTNET_DP_DIR="+dir, deviceplugin.ConfigEnv+`=[{"name":"eth0","lowerDevice":"eth0"}]`)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		t.Logf("probe stderr:\n%s", errOut.String())
		require.NoError(t, err, "probe:\n%s", out.String())
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	const res = `macvtap\.network\.kubevirt\.io/eth0`
	alloc := func(pod string) string {
		return `^kubelet: allocated ` + res + ` to pod ` + pod + `: deviceIDs \[(eth0Mvp[0-9]+)\] devices \[/dev/tap[0-9]+->/dev/tap[0-9]+:rw\] env \[MACVTAP_NETWORK_KUBEVIRT_IO_ETH0=(eth0Mvp[0-9]+)\]$`
	}
	want := []string{
		`^kubelet: device manager of Kubernetes ` + regexp.QuoteMeta(*kubeletVersion) + ` serving kubelet\.sock$`,
		`^kubelet: plugin registered; capacity ` + res + `=100 allocatable=100$`,
		alloc("pod-a"),
		`^plugin: restart`,
		`^kubelet: plugin gone; capacity ` + res + `=100 allocatable=`,
		`^kubelet: plugin registered again; capacity ` + res + `=100 allocatable=100$`,
		alloc("pod-b"),
		`^kubelet: restart`,
		`^kubelet: plugin registered with the new kubelet; capacity ` + res + `=100 allocatable=100; in use from the checkpoint \[eth0Mvp[0-9]+ eth0Mvp[0-9]+\]$`,
		`^kubelet: pod-a deleted$`,
		`^kubelet: in use \[eth0Mvp[0-9]+\]$`,
		alloc("pod-c"),
		`^kubelet: in use \[eth0Mvp[0-9]+ eth0Mvp[0-9]+\]$`,
		`^ok$`,
	}
	require.Len(t, lines, len(want), "transcript:\n%s", data)
	ids := map[string]string{}
	for i, re := range want {
		m := regexp.MustCompile(re).FindStringSubmatch(lines[i])
		require.NotNil(t, m, "line %d %q does not match %s", i+1, lines[i], re)
		if len(m) == 3 {
			require.Equal(t, m[1], m[2], "the env names the allocated device: %s", lines[i])
			ids[strings.Fields(lines[i])[5]] = m[1]
		}
	}
	require.NotEqual(t, ids["pod-a:"], ids["pod-b:"], "pod-b got a device of its own")
	require.NotEqual(t, ids["pod-b:"], ids["pod-c:"], "pod-c got a device of its own")
}
