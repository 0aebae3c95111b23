package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// hotplugVMI is a KubeVirt 1.x VMI (hashed pod interface names):
// masquerade on the pod network and, when blue is not "-", a layer-2
// bridge interface blue on a Multus network (blue is a suffix of its
// entry: "" plugged, ", state: absent" unplugged).
func hotplugVMI(tb testing.TB, blue string) *api.VMI {
	tb.Helper()
	y := `
kind: VirtualMachineInstance
metadata: {name: plug, namespace: ns1, uid: 7f3c0d52-0000-4000-8000-000000000041, annotations: {virtnet.io/pod-interface-names: hashed}}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, masquerade: {}}
`
	nets := "  networks:\n  - {name: default, pod: {}}\n"
	if blue != "-" {
		y += "      - {name: blue, bridge: {}" + blue + "}\n"
		nets += "  - {name: blue, multus: {networkName: blue-net}}\n"
	}
	return testutil.LoadVMI(tb, y+nets)
}

// BenchmarkHotplugPhase1 times phase1 of one hot-plugged interface on the
// pod of a running VM, on this kernel: each iteration makes a fresh pod,
// runs the VM's start phase1 (masquerade on eth0: start-ns/op, the
// baseline), adds a layer-2 secondary pod link (a veth with no address,
// as a Multus bridge network without IPAM leaves it), then times phase1
// plugging it as a bridge interface (plug-ns/op) and phase1 unplugging it
// (unplug-ns/op). Medians; the caches on tmpfs (/run), as in a pod.
func BenchmarkHotplugPhase1(b *testing.B) {
	testutil.RequireRoot(b)
	ctx := context.Background()
	start, plug, unplug := hotplugVMI(b, "-"), hotplugVMI(b, ""), hotplugVMI(b, ", state: absent")
	var starts, plugs, unplugs []time.Duration
	for b.Loop() {
		b.StopTimer()
		pod := testutil.NewPod(b)
		store, err := cache.New(filepath.Join(runTempDir(b), "cache"))
		require.NoError(b, err)
		b.StartTimer()
		t0 := time.Now()
		require.NoError(b, phase1.Run(ctx, start, pod.Pod.Path, store, phase1.Options{}))
		starts = append(starts, time.Since(t0))
		b.StopTimer()
		testutil.AddVeth(b, pod.Node, "veth-blue", pod.Pod, api.HashedPodInterface("blue"), 1500)
		b.StartTimer()
		t0 = time.Now()
		require.NoError(b, phase1.Run(ctx, plug, pod.Pod.Path, store, phase1.Options{}))
		plugs = append(plugs, time.Since(t0))
		t0 = time.Now()
		require.NoError(b, phase1.Run(ctx, unplug, pod.Pod.Path, store, phase1.Options{}))
		unplugs = append(unplugs, time.Since(t0))
	}
	b.ReportMetric(float64(median(starts)), "start-ns/op")
	b.ReportMetric(float64(median(plugs)), "plug-ns/op")
	b.ReportMetric(float64(median(unplugs)), "unplug-ns/op")
}
