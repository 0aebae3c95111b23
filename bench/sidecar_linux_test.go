package bench

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/kubevirt/hookapi/info"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// rssKiB is the resident memory (VmRSS) of process pid.
func rssKiB(tb testing.TB, pid int) int { return statusKiB(tb, pid, "VmRSS:") }

// statusKiB is one field of /proc/PID/status in KiB (VmRSS:, RssAnon:,
// RssFile:).
func statusKiB(tb testing.TB, pid int, field string) int {
	tb.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(tb, err)
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field {
			kib, err := strconv.Atoi(f[1])
			require.NoError(tb, err)
			return kib
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// BenchmarkSidecarRSS measures the resident memory of the masquerade
// binding sidecar (the shipped binary, static) in a pod that phase1 and
// the CNI's hand-off record prepared: idle after start and one Info call
// (idle-rss-KiB), after 100 OnDefineDomain calls (rss100-KiB) and after
// 1,000 (rss1000-KiB; of which anonymous memory, anon1000-KiB, and
// pages of the binary, file1000-KiB), each call on a connection of its own with KubeVirt
// v1.9.0's domain and VMI, as virt-launcher makes them; growth-B/call is
// the growth from the 100th call to the 1,000th per call (anon-growth-B/call:
// of the anonymous memory alone; the rest is pages of the binary that
// rarer code paths touch, bounded by its size);
// settled1000-KiB is the resident memory a second after the last call,
// once the sidecar has returned what the calls used. One iteration is
// the 1,000 calls.
func BenchmarkSidecarRSS(b *testing.B) {
	testutil.RequireRoot(b)
	pod := testutil.NewPod(b)
	vmi := &api.VMI{Metadata: api.ObjectMeta{Name: "x", Namespace: "default", UID: "rss-bench"},
		Spec: api.VMISpec{Domain: api.DomainSpec{Devices: api.Devices{Interfaces: []api.Interface{{Name: "default", Masquerade: &struct{}{}}}}},
			Networks: []api.Network{{Name: "default", Pod: &api.PodNetwork{}}}}}
	api.SetDefaults(vmi)
	require.NoError(b, api.Validate(vmi))
	store, err := cache.New(b.TempDir())
	require.NoError(b, err)
	require.NoError(b, phase1.Run(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
	rec, err := store.ReadInterface("rss-bench", "default")
	require.NoError(b, err)
	alias, err := kvplugin.Encode(rec)
	require.NoError(b, err)
	require.NoError(b, kvplugin.WriteAlias(pod.Pod.Path, rec.Tap, alias))
	require.NoError(b, pod.Pod.Do(func() error {
		return os.WriteFile("/proc/sys/net/ipv4/ip_unprivileged_port_start", []byte("67"), 0o644)
	}))
	td := "../cmd/virtnet-binding-sidecar/testdata/kubevirt-v1.9.0/"
	domain, err := os.ReadFile(td + "domain-masquerade.xml")
	require.NoError(b, err)
	vmiJSON, err := os.ReadFile(td + "vmi-masquerade.json")
	require.NoError(b, err)

	dir := b.TempDir()
	bin := filepath.Join(dir, "virtnet-binding-sidecar")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../cmd/virtnet-binding-sidecar")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(b, err, "go build:\n%s", out)
	hooks := filepath.Join(dir, "hooks")
	require.NoError(b, os.Mkdir(hooks, 0o755))
	resolv := filepath.Join(dir, "resolv.conf")
	require.NoError(b, os.WriteFile(resolv, []byte("nameserver 10.96.0.10\nsearch default.svc.cluster.local\n"), 0o644))
	cmd := exec.Command(bin, "-socket-dir", hooks, "-resolv-conf", resolv, "-log-level", "warn")
	cmd.Env = []string{"NETWORK_BINDING_PLUGIN_NAME=virtnet-masquerade", "CONTAINER_NAME=hook-sidecar-0"}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(b, pod.Pod.Do(cmd.Start))
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sock := filepath.Join(hooks, "virtnet-masquerade.sock")
	for i := 0; ; i++ {
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			break
		}
		require.Less(b, i, 200, "no socket at %s; log:\n%s", sock, &logs)
		time.Sleep(50 * time.Millisecond)
	}
	call := func(f func(*grpc.ClientConn) error) {
		conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(b, err)
		defer conn.Close()
		require.NoError(b, f(conn), "sidecar log:\n%s", &logs)
	}
	ctx := context.Background()
	call(func(c *grpc.ClientConn) error {
		_, err := info.NewInfoClient(c).Info(ctx, &info.InfoParams{})
		return err
	})
	time.Sleep(time.Second)
	idle, idleAnon := rssKiB(b, cmd.Process.Pid), statusKiB(b, cmd.Process.Pid, "RssAnon:")
	define := func(c *grpc.ClientConn) error {
		_, err := v1alpha3.NewCallbacksClient(c).OnDefineDomain(ctx, &v1alpha3.OnDefineDomainParams{DomainXML: domain, Vmi: vmiJSON})
		return err
	}
	var at100, at1000, anon100, anon1000 int
	for b.Loop() {
		for i := range 1000 {
			call(define)
			if i == 99 {
				at100, anon100 = rssKiB(b, cmd.Process.Pid), statusKiB(b, cmd.Process.Pid, "RssAnon:")
			}
		}
		at1000, anon1000 = rssKiB(b, cmd.Process.Pid), statusKiB(b, cmd.Process.Pid, "RssAnon:")
	}
	// The sidecar returns a call's memory after answering it (see
	// sidecar.releaseMemory): what stays once it is idle again.
	time.Sleep(time.Second)
	b.ReportMetric(float64(rssKiB(b, cmd.Process.Pid)), "settled1000-KiB")
	b.ReportMetric(float64(statusKiB(b, cmd.Process.Pid, "RssAnon:")), "anon1000-KiB")
	b.ReportMetric(float64(statusKiB(b, cmd.Process.Pid, "RssFile:")), "file1000-KiB")
	b.ReportMetric(float64(idle), "idle-rss-KiB")
	b.ReportMetric(float64(idleAnon), "idle-anon-KiB")
	b.ReportMetric(float64(at100), "rss100-KiB")
	b.ReportMetric(float64(at1000), "rss1000-KiB")
	b.ReportMetric(float64(at1000-at100)*1024/900, "growth-B/call")
	b.ReportMetric(float64(anon1000-anon100)*1024/900, "anon-growth-B/call")
}
