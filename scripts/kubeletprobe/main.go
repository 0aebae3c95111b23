//go:build ignore

// Command virtnet-kubeletprobe drives Kubernetes' own kubelet device
// manager (pkg/kubelet/cm/devicemanager, built by scripts/kubeletprobe.sh
// in a temporary tree, never in virtnet) against the macvtap device plugin
// daemon, and prints a transcript of what the kubelet saw: registration,
// capacity, allocations, a plugin restart, a kubelet restart, a deleted pod.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/pkg/kubelet/cm/containermap"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"
	"k8s.io/kubernetes/pkg/kubelet/lifecycle"
)

const res = "macvtap.network.kubevirt.io/eth0"

type ready struct{}

func (ready) AddSource(string) {}
func (ready) AllReady() bool   { return true }

func say(f string, a ...any) { fmt.Printf(f+"\n", a...) }

func fail(f string, a ...any) {
	say("FAIL: "+f, a...)
	os.Exit(1)
}

// wait polls cond every 50ms for at most 60s.
func wait(what string, cond func() bool) {
	for range 1200 {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	fail("timed out waiting for %s", what)
}

func newPod(name string) *v1.Pod {
	q := resource.MustParse("1")
	return &v1.Pod{
		ObjectMeta: metav1ObjectMeta(name),
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "compute", Resources: v1.ResourceRequirements{
			Limits: v1.ResourceList{res: q}, Requests: v1.ResourceList{res: q}}}}},
	}
}

func main() {
	dir := flag.String("dir", "", "device-plugin directory (the kubelet's socket and the plugin's)")
	plugin := flag.String("plugin", "", "the device plugin daemon's command")
	flag.Parse()
	logger := klog.Background()
	ctx := klog.NewContext(context.Background(), logger)
	var pods []*v1.Pod
	active := func() []*v1.Pod { return pods }

	startKubelet := func() *devicemanager.ManagerImpl {
		m, err := devicemanager.VirtnetProbeNewManager(logger, filepath.Join(*dir, "kubelet.sock"))
		if err != nil {
			fail("new device manager: %v", err)
		}
		if err := m.Start(logger, active, ready{}, containermap.NewContainerMap(), sets.New[string]()); err != nil {
			fail("start device manager: %v", err)
		}
		return m
	}
	startPlugin := func() *exec.Cmd {
		cmd := exec.Command(*plugin)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			fail("start plugin: %v", err)
		}
		return cmd
	}
	stopPlugin := func(cmd *exec.Cmd) {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	capacity := func(m *devicemanager.ManagerImpl) string {
		c, a, _ := m.GetCapacity(logger)
		cq, aq := c[res], a[res]
		return fmt.Sprintf("capacity %s=%s allocatable=%s", res, cq.String(), aq.String())
	}
	allocate := func(m *devicemanager.ManagerImpl, pod *v1.Pod) string {
		if err := m.Allocate(ctx, pod, &pod.Spec.Containers[0], lifecycle.AddOperation); err != nil {
			fail("allocate %s: %v", pod.Name, err)
		}
		opts, err := m.GetDeviceRunContainerOptions(ctx, pod, &pod.Spec.Containers[0])
		if err != nil || opts == nil {
			fail("run options of %s: %v", pod.Name, err)
		}
		var ids []string
		for id := range m.GetDevices(string(pod.UID), "compute")[res] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var devs, envs []string
		for _, d := range opts.Devices {
			devs = append(devs, fmt.Sprintf("%s->%s:%s", d.PathOnHost, d.PathInContainer, d.Permissions))
		}
		for _, e := range opts.Envs {
			envs = append(envs, e.Name+"="+e.Value)
		}
		say("kubelet: allocated %s to pod %s: deviceIDs %v devices %v env %v", res, pod.Name, ids, devs, envs)
		if len(ids) != 1 || len(devs) != 1 || len(envs) != 1 || !strings.HasSuffix(envs[0], "="+ids[0]) {
			fail("allocation of %s is not one device with its tap and env", pod.Name)
		}
		return ids[0]
	}

	say("kubelet: device manager of Kubernetes %s serving %s", kubernetesVersion, "kubelet.sock")
	m := startKubelet()
	p := startPlugin()
	wait("registration", func() bool { return m.VirtnetProbeConnected(res) })
	wait("capacity 100", func() bool { return strings.HasSuffix(capacity(m), "=100 allocatable=100") })
	say("kubelet: plugin registered; %s", capacity(m))

	podA := newPod("pod-a")
	pods = append(pods, podA)
	a := allocate(m, podA)

	say("plugin: restart (SIGTERM, start again)")
	stopPlugin(p)
	wait("the endpoint to stop", func() bool { return !m.VirtnetProbeConnected(res) })
	say("kubelet: plugin gone; %s", capacity(m))
	p = startPlugin()
	wait("re-registration after the plugin restart", func() bool { return m.VirtnetProbeConnected(res) })
	say("kubelet: plugin registered again; %s", capacity(m))
	podB := newPod("pod-b")
	pods = append(pods, podB)
	b := allocate(m, podB)
	if b == a {
		fail("pod-b got pod-a's device %s", a)
	}

	say("kubelet: restart (stop the device manager, start a new one on the same directory)")
	if err := m.Stop(logger); err != nil {
		fail("stop: %v", err)
	}
	m = startKubelet()
	wait("re-registration after the kubelet restart", func() bool { return m.VirtnetProbeConnected(res) })
	wait("capacity 100 after the kubelet restart", func() bool { return strings.HasSuffix(capacity(m), "=100 allocatable=100") })
	say("kubelet: plugin registered with the new kubelet; %s; in use from the checkpoint %v", capacity(m), m.VirtnetProbeAllocated(res))

	say("kubelet: pod-a deleted")
	pods = []*v1.Pod{podB}
	m.UpdateAllocatedDevices(logger)
	say("kubelet: in use %v", m.VirtnetProbeAllocated(res))
	podC := newPod("pod-c")
	pods = append(pods, podC)
	allocate(m, podC)
	say("kubelet: in use %v", m.VirtnetProbeAllocated(res))

	stopPlugin(p)
	_ = m.Stop(logger)
	say("ok")
}

func metav1ObjectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")}
}

// kubernetesVersion is set by scripts/kubeletprobe.sh (-ldflags -X).
var kubernetesVersion = "unknown"
