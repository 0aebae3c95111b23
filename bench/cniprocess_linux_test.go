package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// buildPlugins builds virtnet's CNI plugins (static, as shipped) next to
// the reference plugins of go.mod's version.
func buildPlugins(b *testing.B) (dir string) {
	b.Helper()
	ref := testutil.CNIPluginDir(b)
	dir = b.TempDir()
	for _, p := range []string{"bridge", "host-local"} {
		require.NoError(b, os.Symlink(filepath.Join(ref, p), filepath.Join(dir, p)))
	}
	for name, pkg := range map[string]string{"virtnet-binding-cni": "../cmd/virtnet-binding-cni", "macvtap": "../cmd/macvtap-cni",
		"empty": "./testdata/empty"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, name), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(b, err, "go build %s:\n%s", pkg, out)
	}
	return dir
}

// runTempDir is a fresh directory under /run, removed at the end of tb.
// A node's /run is a tmpfs (systemd mounts it so), where the records' fsyncs
// cost nothing; where this machine's is not, the directory is a tmpfs of
// its own, so that the figures are a node's and not this disk's.
func runTempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/run", "virtnet-bench-")
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, os.RemoveAll(dir)) })
	var fs unix.Statfs_t
	require.NoError(tb, unix.Statfs("/run", &fs))
	if fs.Type != unix.TMPFS_MAGIC {
		require.NoError(tb, unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64m"))
		tb.Cleanup(func() { require.NoError(tb, unix.Unmount(dir, unix.MNT_DETACH)) })
	}
	return dir
}

// cniRun execs plugin with verb inside netns (the runtime's namespace:
// the node of the pod) and returns how long the process took.
func cniRun(b *testing.B, runtimeNS, plugin, verb, netns, conf, binDir string) time.Duration {
	b.Helper()
	cmd := exec.Command(filepath.Join(binDir, plugin))
	cmd.Env = []string{"CNI_COMMAND=" + verb, "CNI_CONTAINERID=bench-" + filepath.Base(netns), "CNI_NETNS=" + netns,
		"CNI_IFNAME=net1", "CNI_PATH=" + binDir}
	cmd.Stdin = strings.NewReader(conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var took time.Duration
	nsh, err := ns.GetNS(runtimeNS)
	require.NoError(b, err)
	defer func() { _ = nsh.Close() }()
	// The child inherits the namespace of the locked thread that forks it.
	require.NoError(b, nsh.Do(func(ns.NetNS) error {
		start := time.Now()
		err := cmd.Run()
		took = time.Since(start)
		return err
	}), "%s %s:\n%s", plugin, verb, out.String())
	return took
}

// BenchmarkCNIProcess times ADD and DEL of the CNI plugins as whole
// processes (exec, package init, the verb, exit) on identical fresh pods
// (a pod namespace with eth0 on a node namespace, testutil.NewPod), in one
// run: the reference bridge plugin (with host-local) and
// virtnet-binding-cni with the masquerade binding, as KubeVirt's binding
// attachment calls it (the bridge binding needs dummy links, which this
// kernel may lack). It reports the median per verb as
// add-ns/op and del-ns/op. The macvtap plugin is not here: its ADD needs
// macvtap, which only the kernel VM has; BenchmarkCNIStartup has it.
func BenchmarkCNIProcess(b *testing.B) {
	testutil.RequireRoot(b)
	bin := buildPlugins(b)
	confs := []struct {
		name, plugin, conf string
		dir                func(testing.TB) string
	}{
		{"bridge-reference", "bridge", `{"cniVersion":"1.0.0","name":"benchnet","type":"bridge","bridge":"cni0",` +
			`"ipam":{"type":"host-local","subnet":"10.250.0.0/24","dataDir":"%s"}}`, testing.TB.TempDir},
		// The binding CNI keeps its records under /run only (a node's
		// tmpfs), as on a node.
		{"virtnet-binding-cni-masquerade", "virtnet-binding-cni", `{"cniVersion":"1.0.0","name":"virtnet-masquerade","type":"virtnet-binding-cni",` +
			`"binding":"masquerade","cacheDir":"%s","args":{"cni":{"logicNetworkName":"default"}}}`, runTempDir},
	}
	for _, c := range confs {
		b.Run(c.name, func(b *testing.B) {
			var adds, dels []time.Duration
			for b.Loop() {
				b.StopTimer()
				pod := testutil.NewPod(b)
				conf := fmt.Sprintf(c.conf, c.dir(b))
				b.StartTimer()
				adds = append(adds, cniRun(b, pod.Node.Path, c.plugin, "ADD", pod.Pod.Path, conf, bin))
				dels = append(dels, cniRun(b, pod.Node.Path, c.plugin, "DEL", pod.Pod.Path, conf, bin))
			}
			b.ReportMetric(float64(median(adds)), "add-ns/op")
			b.ReportMetric(float64(median(dels)), "del-ns/op")
		})
	}
}

// BenchmarkCNIStartup times the start-up of each plugin: a whole VERSION
// process (median, <plugin>-version-ns/op) and its package initialisation
// as the runtime reports it with GODEBUG=inittrace=1 (the sum of every
// package's init clock time, median over the runs: <plugin>-init-ns/op;
// bytes allocated by init: <plugin>-init-B/op). "empty" is a Go program
// that does nothing (the floor), built like the plugins. Each iteration
// runs every binary once, so that the machine's load falls on all alike.
func BenchmarkCNIStartup(b *testing.B) {
	bin := buildPlugins(b)
	plugins := []string{"empty", "bridge", "virtnet-binding-cni", "macvtap"}
	runs := make([][]time.Duration, len(plugins))
	inits := make([][]time.Duration, len(plugins))
	bytesInit := make([]float64, len(plugins))
	for b.Loop() {
		for i, p := range plugins {
			cmd := exec.Command(filepath.Join(bin, p))
			cmd.Env = []string{"CNI_COMMAND=VERSION", "GODEBUG=inittrace=1"}
			cmd.Stdin = strings.NewReader(`{"cniVersion":"1.1.0"}`)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			require.NoError(b, cmd.Run(), "%s VERSION:\n%s", p, stderr.String())
			runs[i] = append(runs[i], time.Since(start))
			d, by := initTrace(stderr.String())
			inits[i] = append(inits[i], d)
			bytesInit[i] = by
		}
	}
	for i, p := range plugins {
		b.ReportMetric(float64(median(runs[i])), p+"-version-ns/op")
		b.ReportMetric(float64(median(inits[i])), p+"-init-ns/op")
		b.ReportMetric(bytesInit[i], p+"-init-B/op")
	}
}

// initTrace sums "init P @T ms, C ms clock, B bytes, A allocs" lines.
func initTrace(s string) (time.Duration, float64) {
	var clock, bytes float64
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		c, err1 := strconv.ParseFloat(f[4], 64)
		by, err2 := strconv.ParseFloat(f[7], 64)
		if err1 == nil && err2 == nil {
			clock += c
			bytes += by
		}
	}
	return time.Duration(clock * float64(time.Millisecond)), bytes
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func TestInitTrace(t *testing.T) {
	d, by := initTrace("init runtime @0.01 ms, 0.10 ms clock, 0 bytes, 0 allocs\ninit net @1.2 ms, 0.25 ms clock, 752 bytes, 15 allocs\nother\n")
	require.Equal(t, 350*time.Microsecond, d)
	require.Equal(t, 752.0, by)
}
