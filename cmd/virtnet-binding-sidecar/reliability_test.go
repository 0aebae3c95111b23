//go:build linux

package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/kubevirt/kvplugin/sidecar"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// inProcess runs sidecar.Run in this process for the masquerade plugin of
// pod and returns the client, its logs and the function that ends it
// (also called when the test ends) and returns Run's error.
func inProcess(t *testing.T, pod *testutil.Pod, cfg sidecar.Config) (*client, *syncBuffer, func() error) {
	t.Helper()
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.96.0.10\nsearch ns1.svc.cluster.local svc.cluster.local example.org\n"), 0o644))
	logs := &syncBuffer{}
	if cfg.Plugin == "" {
		cfg.Plugin = "virtnet-masquerade"
	}
	cfg.SocketDir, cfg.NetNS, cfg.ResolvConf = dir, pod.Pod.Path, resolv
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sidecar.Run(ctx, cfg) }()
	var result error
	ended := false
	end := func() error {
		if !ended {
			cancel()
			select {
			case result = <-done:
			case <-time.After(time.Minute): // a watchdog, not a timing assertion
				t.Fatal("the sidecar did not stop")
			}
			ended = true
		}
		return result
	}
	t.Cleanup(func() { _ = end(); t.Logf("sidecar log:\n%s", logs) })
	sock := filepath.Join(dir, cfg.Plugin+".sock")
	waitSocket(t, sock, nil)
	return &client{t: t, sock: sock}, logs, end
}

func masqueradeInputs(t *testing.T) (domain, vmi []byte) {
	t.Helper()
	domain, err := os.ReadFile("testdata/kubevirt-v1.9.0/domain-masquerade.xml")
	require.NoError(t, err)
	vmi, err = os.ReadFile("testdata/kubevirt-v1.9.0/vmi-masquerade.json")
	require.NoError(t, err)
	return domain, vmi
}

// TestDHCPRestartsAfterDelAdd: while the sidecar runs, the CNI's DEL and
// ADD of the interface (phase1 Cleanup and Run: the bridge deleted and
// made again under its name) leave the DHCP server bound to a link that
// is gone; the sidecar notices, says so in its log, and serves again on
// the new bridge: a VM plugged into it gets its lease.
func TestDHCPRestartsAfterDelAdd(t *testing.T) {
	testutil.RequireRoot(t)
	needBinary(t, "busybox")
	pod := testutil.NewPod(t)
	vmi, store := prepare(t, pod, api.BindingMasquerade)
	c, logs, _ := inProcess(t, pod, sidecar.Config{WatchInterval: 20 * time.Millisecond})
	domain, vmiJSON := masqueradeInputs(t)
	out, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	mac := dom.Devices.Interfaces[0].MAC.Address
	require.Equal(t, "10.0.2.2", lease(t, vmPort(t, pod, "k6t-eth0", mac))["ip"])

	// DEL and ADD of the CNI plugin, as prepare does them.
	require.NoError(t, phase1.Cleanup(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
	require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, store, phase1.Options{}))
	rec, err := store.ReadInterface(vmi.Metadata.UID, "default")
	require.NoError(t, err)
	alias, err := kvplugin.Encode(rec)
	require.NoError(t, err)
	require.NoError(t, kvplugin.WriteAlias(pod.Pod.Path, rec.Tap, alias))

	old, err := pod.Pod.Handle.LinkByName("vmport")
	require.NoError(t, err)
	require.NoError(t, pod.Pod.Handle.LinkDel(old))
	require.Equal(t, "10.0.2.2", lease(t, vmPort(t, pod, "k6t-eth0", mac))["ip"], "served on the new bridge")
	require.Contains(t, logs.String(), "bridge went away or was made again")
	require.Contains(t, logs.String(), "DHCP server restarted on the new bridge")
}

// TestShutdownDeadline: a client that holds a half-sent call (a stream
// opened, its message never sent) does not hold the sidecar's stop: after
// ShutdownGrace the call is closed and Run returns.
func TestShutdownDeadline(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	c, logs, end := inProcess(t, pod, sidecar.Config{ShutdownGrace: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A stream opened and its message never sent.
	_, err := c.conn().NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, v1alpha3.Callbacks_OnDefineDomain_FullMethodName)
	require.NoError(t, err)
	_, err = v1alpha3.NewCallbacksClient(c.conn()).Shutdown(ctx, &v1alpha3.ShutdownParams{})
	require.NoError(t, err)
	require.NoError(t, end())
	require.Contains(t, logs.String(), "calls still open after the shutdown grace")
}

// TestCallLimits: a call whose message is over sidecar.MaxMessageSize is
// refused (ResourceExhausted) before it is parsed.
func TestCallLimits(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	c, _, _ := inProcess(t, pod, sidecar.Config{})
	_, vmiJSON := masqueradeInputs(t)
	big := "<domain>" + strings.Repeat("<!-- padding -->", sidecar.MaxMessageSize/16+1) + "</domain>"
	_, err := c.define([]byte(big), vmiJSON)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
}

// TestSlirpSearchDomainsFromPod: slirp through the sidecar offers the
// guest the search domains of the pod's resolv.conf (dnssearch=), not
// KubeVirt's fallback cluster.local.
func TestSlirpSearchDomainsFromPod(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	c, _, _ := inProcess(t, pod, sidecar.Config{Plugin: "virtnet-slirp"})
	domain, err := os.ReadFile("testdata/kubevirt-v1.9.0/domain-slirp.xml")
	require.NoError(t, err)
	vmiJSON, err := os.ReadFile("testdata/kubevirt-v1.9.0/vmi-slirp.json")
	require.NoError(t, err)
	out, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	for _, d := range []string{"ns1.svc.cluster.local", "svc.cluster.local", "example.org"} {
		require.Contains(t, string(out), "dnssearch="+d)
	}
	require.NotContains(t, string(out), "dnssearch=cluster.local")
}

// TestDuplicateAliasesRefused: a domain that already holds two interfaces
// with one alias is refused, instead of coming back with two NICs of the
// plugin's.
func TestDuplicateAliasesRefused(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	prepare(t, pod, api.BindingMasquerade)
	c, _, _ := inProcess(t, pod, sidecar.Config{})
	domain, vmiJSON := masqueradeInputs(t)
	out, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	require.Len(t, dom.Devices.Interfaces, 1)
	dom.Devices.Interfaces = append(dom.Devices.Interfaces, dom.Devices.Interfaces[0])
	twice, err := dom.Marshal()
	require.NoError(t, err)
	_, err = c.define([]byte(twice), vmiJSON)
	require.Error(t, err)
	require.Contains(t, err.Error(), `two interfaces with alias "ua-default"`)
}

// TestMemoryReturnedAfterACall: after an OnDefineDomain the sidecar hands
// back to the kernel what the call used (a forced collection, counted by
// the runtime as /gc/cycles/forced:gc-cycles); nothing else in this test
// forces one. BenchmarkSidecarRSS measures what it saves.
func TestMemoryReturnedAfterACall(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	prepare(t, pod, api.BindingMasquerade)
	c, _, _ := inProcess(t, pod, sidecar.Config{})
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	domain, vmiJSON := masqueradeInputs(t)
	before := forced()
	c.info()
	require.Equal(t, before, forced(), "Info forced a collection")
	_, err := c.define(domain, vmiJSON)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return forced() > before }, 30*time.Second, 10*time.Millisecond,
		"no forced collection after OnDefineDomain")
}
