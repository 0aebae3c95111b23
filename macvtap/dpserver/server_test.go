package dpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

// fakeKernel stands for the host's links (the host kernel of CI has no
// macvtap; TestDevicePluginInVM uses the real one).
type fakeKernel struct {
	mu      sync.Mutex
	down    map[string]string // lower -> reason
	links   map[string]int    // host macvtap -> ifindex
	next    int
	failFor string // lower device whose Ensure fails
	// failLink is a host link whose Ensure fails; onEnsure, when set,
	// runs at the start of every Ensure (outside the lock).
	failLink string
	onEnsure func(link string)
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{down: map[string]string{}, links: map[string]int{}, next: 10}
}

func (k *fakeKernel) LowerHealthy(_ context.Context, lower string) (bool, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	why := k.down[lower]
	return why == "", why, nil
}

func (k *fakeKernel) Ensure(_ context.Context, s deviceplugin.Slot) (int, error) {
	if k.onEnsure != nil {
		k.onEnsure(s.HostLink)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.LowerDevice == k.failFor || s.HostLink == k.failLink {
		return 0, os.ErrNotExist
	}
	if i, ok := k.links[s.HostLink]; ok {
		return i, nil
	}
	k.next++
	k.links[s.HostLink] = k.next
	return k.next, nil
}

func (k *fakeKernel) Remove(_ context.Context, name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.links, name)
	return nil
}

func (k *fakeKernel) Exists(_ context.Context, name string) (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.links[name]
	return ok, nil
}

func (k *fakeKernel) has(name string) bool {
	ok, _ := k.Exists(context.Background(), name)
	return ok
}

func (k *fakeKernel) setDown(lower, why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.down[lower] = why
}

// fakeKubelet is the kubelet's Registration service (and its
// pod-resources List), as the kubelet serves them on its sockets.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	podresources.UnimplementedPodResourcesListerServer
	regs chan *pluginapi.RegisterRequest
	srv  *grpc.Server

	mu       sync.Mutex
	assigned map[string][]string // resource name -> device IDs held by live pods
}

func startKubelet(t *testing.T, sock string) *fakeKubelet {
	t.Helper()
	k := &fakeKubelet{regs: make(chan *pluginapi.RegisterRequest, 16), srv: grpc.NewServer(), assigned: map[string][]string{}}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	podresources.RegisterPodResourcesListerServer(k.srv, k)
	_ = os.Remove(sock)
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	go func() { _ = k.srv.Serve(l) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.regs <- r
	return &pluginapi.Empty{}, nil
}

func (k *fakeKubelet) List(context.Context, *podresources.ListPodResourcesRequest) (*podresources.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := &podresources.ContainerResources{Name: "compute"}
	for r, ids := range k.assigned {
		c.Devices = append(c.Devices, &podresources.ContainerDevices{ResourceName: r, DeviceIds: slices.Clone(ids)})
	}
	return &podresources.ListPodResourcesResponse{PodResources: []*podresources.PodResources{{Name: "virt-launcher-a", Namespace: "default", Containers: []*podresources.ContainerResources{c}}}}, nil
}

func (k *fakeKubelet) registration(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.regs:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no registration within 20s")
		return nil
	}
}

func dialPlugin(t *testing.T, dir, endpoint string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

func recvDevices(t *testing.T, s grpc.ServerStreamingClient[pluginapi.ListAndWatchResponse]) map[string]string {
	t.Helper()
	resp, err := s.Recv()
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range resp.GetDevices() {
		out[d.GetID()] = d.GetHealth()
	}
	return out
}

// TestDaemonAgainstKubeletAPI plays the kubelet's side of the v1beta1 API
// (the kubelet's own device manager does the same in
// TestKubeletDeviceManagerTranscript): registration, capacity and health,
// Allocate, a kubelet restart, and giving back a device no pod holds.
func TestDaemonAgainstKubeletAPI(t *testing.T) {
	dir := t.TempDir()
	kubelet := startKubelet(t, filepath.Join(dir, "kubelet.sock"))
	podRes := filepath.Join(dir, "pod-resources.sock")
	k := newFakeKernel()
	d, err := New(Config{
		Resources: []deviceplugin.Resource{
			{Name: "eth0", LowerDevice: "eth0", Mode: macvtap.ModeBridge, Capacity: 3},
			{Name: "data.plane", LowerDevice: "eno1", Mode: macvtap.ModeVEPA, Capacity: 1},
		},
		Kernel: k, Dir: dir, PodResourcesSocket: podRes, Poll: 10 * time.Millisecond, GiveBackAfter: time.Nanosecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	regs := map[string]*pluginapi.RegisterRequest{}
	for range 2 {
		r := kubelet.registration(t)
		regs[r.GetResourceName()] = r
	}
	reg := regs["macvtap.network.kubevirt.io/eth0"]
	require.NotNil(t, reg, "registrations: %v", regs)
	require.Equal(t, "v1beta1", reg.GetVersion())
	require.Equal(t, "virtnet-macvtap-eth0.sock", reg.GetEndpoint())
	require.Contains(t, regs, "macvtap.network.kubevirt.io/data.plane")

	outer := t
	plugin := dialPlugin(t, dir, reg.GetEndpoint())
	opts, err := plugin.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	require.NoError(t, err)
	require.False(t, opts.GetPreStartRequired())

	t.Run("capacity and health", func(t *testing.T) {
		lw, err := plugin.ListAndWatch(ctx, &pluginapi.Empty{})
		require.NoError(t, err)
		healthy := map[string]string{"eth0Mvp0": "Healthy", "eth0Mvp1": "Healthy", "eth0Mvp2": "Healthy"}
		require.Equal(t, healthy, recvDevices(t, lw))
		k.setDown("eth0", "lower device eth0 is down")
		require.Equal(t, map[string]string{"eth0Mvp0": "Unhealthy", "eth0Mvp1": "Unhealthy", "eth0Mvp2": "Unhealthy"}, recvDevices(t, lw))
		k.setDown("eth0", "")
		require.Equal(t, healthy, recvDevices(t, lw))
	})

	t.Run("Allocate", func(t *testing.T) {
		resp, err := plugin.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"eth0Mvp1"}}}})
		require.NoError(t, err)
		require.Len(t, resp.GetContainerResponses(), 1)
		c := resp.GetContainerResponses()[0]
		require.True(t, k.has(macvtap.HostLinkName("eth0Mvp1")))
		require.Len(t, c.GetDevices(), 1)
		require.Equal(t, "rw", c.GetDevices()[0].GetPermissions())
		require.Regexp(t, `^/dev/tap[0-9]+$`, c.GetDevices()[0].GetHostPath())
		require.Equal(t, c.GetDevices()[0].GetHostPath(), c.GetDevices()[0].GetContainerPath())
		require.Equal(t, map[string]string{"MACVTAP_NETWORK_KUBEVIRT_IO_ETH0": "eth0Mvp1"}, c.GetEnvs())
	})

	t.Run("Allocate refuses a foreign device ID and undoes", func(t *testing.T) {
		_, err := plugin.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"eth0Mvp0", "eth0Mvp7"}}}})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.ErrorContains(t, err, `"eth0Mvp7"`)
		require.False(t, k.has(macvtap.HostLinkName("eth0Mvp0")), "the first device's macvtap is undone")
	})

	t.Run("kubelet restart", func(t *testing.T) {
		kubelet.srv.Stop()
		// A starting kubelet removes every socket of the directory.
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
		}
		kubelet = startKubelet(outer, filepath.Join(dir, "kubelet.sock"))
		got := []string{kubelet.registration(t).GetResourceName(), kubelet.registration(t).GetResourceName()}
		require.ElementsMatch(t, []string{"macvtap.network.kubevirt.io/eth0", "macvtap.network.kubevirt.io/data.plane"}, got)
		plugin = dialPlugin(outer, dir, reg.GetEndpoint())
		lw, err := plugin.ListAndWatch(ctx, &pluginapi.Empty{})
		require.NoError(t, err)
		require.Len(t, recvDevices(t, lw), 3)
	})

	t.Run("give back a device no pod holds", func(t *testing.T) {
		_, err := plugin.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"eth0Mvp2"}}}})
		require.NoError(t, err)
		kubelet.mu.Lock()
		kubelet.assigned["macvtap.network.kubevirt.io/eth0"] = []string{"eth0Mvp1"}
		kubelet.mu.Unlock()
		// Serve pod resources on their own socket, as the kubelet does.
		pr := grpc.NewServer()
		podresources.RegisterPodResourcesListerServer(pr, kubelet)
		l, err := net.Listen("unix", podRes)
		require.NoError(t, err)
		go func() { _ = pr.Serve(l) }()
		t.Cleanup(pr.Stop)
		require.Eventually(t, func() bool { return !k.has(macvtap.HostLinkName("eth0Mvp2")) }, 20*time.Second, 10*time.Millisecond,
			"eth0Mvp2's macvtap given back")
		require.True(t, k.has(macvtap.HostLinkName("eth0Mvp1")), "a device a live pod holds is kept")
		// The CNI plugin moves the held device's macvtap into the pod: the
		// daemon stops tracking it.
		require.NoError(t, k.Remove(ctx, macvtap.HostLinkName("eth0Mvp1")))
		require.Eventually(t, func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			_, tracked := d.allocated["eth0Mvp1"]
			return !tracked
		}, 20*time.Second, 10*time.Millisecond, "eth0Mvp1 no longer tracked once its macvtap left the host")
	})

	cancel()
	require.NoError(t, <-done)
	_, err = os.Stat(d.SocketPath("eth0"))
	require.ErrorIs(t, err, os.ErrNotExist, "the socket is removed at exit")
}

func TestAllocateFailureUndoes(t *testing.T) {
	dir := t.TempDir()
	kubelet := startKubelet(t, filepath.Join(dir, "kubelet.sock"))
	k := newFakeKernel()
	k.failFor = "eno2"
	d, err := New(Config{
		Resources: []deviceplugin.Resource{{Name: "a", LowerDevice: "eno2", Mode: macvtap.ModeBridge, Capacity: 2}},
		Kernel:    k, Dir: dir, PodResourcesSocket: "-", Poll: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	reg := kubelet.registration(t)
	_, err = dialPlugin(t, dir, reg.GetEndpoint()).Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"aMvp0"}}}})
	require.Equal(t, codes.Unavailable, status.Code(err))
	require.ErrorContains(t, err, "on eno2")
	free, err := d.inv.Free("a")
	require.NoError(t, err)
	require.Equal(t, 2, free)
}

func TestNewRejects(t *testing.T) {
	_, err := New(Config{Kernel: newFakeKernel()})
	require.ErrorContains(t, err, "no resources")
	_, err = New(Config{Resources: []deviceplugin.Resource{deviceplugin.DefaultResource("eth0")}})
	require.ErrorContains(t, err, "Kernel")
	d, err := New(Config{Resources: []deviceplugin.Resource{deviceplugin.DefaultResource("eth0")}, Kernel: newFakeKernel(), Dir: filepath.Join(t.TempDir(), "none")})
	require.NoError(t, err)
	require.ErrorContains(t, d.Run(t.Context()), "device-plugin directory")
}

func TestEnvName(t *testing.T) {
	require.Equal(t, "MACVTAP_NETWORK_KUBEVIRT_IO_DATA_PLANE_1", EnvName("data.plane-1"))
}

// TestGiveBackSparesNewAllocation: give-back decides from a pod-resources
// list taken before an Allocate of the same device for a new pod; the
// release it then makes must not delete that new pod's macvtap (it would
// never get it back: the kubelet checkpoints the allocation). Only the
// allocation seen stale is released.
func TestGiveBackSparesNewAllocation(t *testing.T) {
	k := newFakeKernel()
	d, err := New(Config{
		Resources: []deviceplugin.Resource{{Name: "a", LowerDevice: "eno1", Mode: macvtap.ModeBridge, Capacity: 2}},
		Kernel:    k, Dir: t.TempDir(), PodResourcesSocket: "-", Poll: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	ctx := t.Context()
	slot, err := d.inv.Slot("a", "aMvp0")
	require.NoError(t, err)
	_, err = d.allocate(ctx, "a", []deviceplugin.Slot{slot})
	require.NoError(t, err)
	d.mu.Lock()
	seen := d.allocated["aMvp0"].at // what give-back saw as stale
	d.mu.Unlock()

	time.Sleep(time.Millisecond)                             // a later allocation time, whatever the clock's resolution
	_, err = d.allocate(ctx, "a", []deviceplugin.Slot{slot}) // a new pod gets the device
	require.NoError(t, err)
	d.release(ctx, "aMvp0", seen, "no live pod holds it")
	require.True(t, k.has(slot.HostLink), "the new pod's macvtap stays")
	d.mu.Lock()
	_, tracked := d.allocated["aMvp0"]
	d.mu.Unlock()
	require.True(t, tracked)

	d.mu.Lock()
	now := d.allocated["aMvp0"].at
	d.mu.Unlock()
	d.release(ctx, "aMvp0", now, "no live pod holds it")
	require.False(t, k.has(slot.HostLink), "the allocation seen stale is given back")
}

// allocateReq is an AllocateRequest of one container for ids.
func allocateReq(ids ...string) *pluginapi.AllocateRequest {
	return &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: ids}}}
}

// held reports whether the daemon holds device id: its slot claimed, its
// allocation recorded and its host macvtap there.
func held(t *testing.T, d *Daemon, k *fakeKernel, id string) bool {
	t.Helper()
	_, err := d.inv.Claim("a", id)
	claimed := errors.Is(err, deviceplugin.ErrInUse)
	if err == nil {
		require.NoError(t, d.inv.Release("a", id))
	}
	d.mu.Lock()
	_, recorded := d.allocated[id]
	d.mu.Unlock()
	return claimed && recorded && k.has(macvtap.HostLinkName(id))
}

// TestFailedAllocateUndoesOnlyWhatItMade: a request that names a device a
// pod already holds next to one that fails (an unknown ID, or a macvtap
// the kernel refuses) fails whole, and undoes only the devices it claimed
// itself: the pod's device keeps its slot, its allocation and its
// macvtap. Before, the failure released every device of the request,
// deleting the macvtap the pod was using.
func TestFailedAllocateUndoesOnlyWhatItMade(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		code codes.Code
	}{
		{"unknown device ID", []string{"aMvp0", "aMvp9"}, codes.InvalidArgument},
		{"unknown device ID first", []string{"aMvp9", "aMvp0"}, codes.InvalidArgument},
		{"macvtap refused", []string{"aMvp0", "aMvp1", "aMvp2"}, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newFakeKernel()
			k.failLink = macvtap.HostLinkName("aMvp2")
			d, err := New(Config{
				Resources: []deviceplugin.Resource{{Name: "a", LowerDevice: "eno1", Mode: macvtap.ModeBridge, Capacity: 3}},
				Kernel:    k, Dir: t.TempDir(), PodResourcesSocket: "-",
			})
			require.NoError(t, err)
			srv := &resourceServer{d: d, res: d.cfg.Resources[0]}
			_, err = srv.Allocate(t.Context(), allocateReq("aMvp0")) // the pod's device
			require.NoError(t, err)

			_, err = srv.Allocate(t.Context(), allocateReq(tc.ids...))
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.True(t, held(t, d, k, "aMvp0"), "the pod's device keeps its slot, allocation and macvtap")
			require.False(t, k.has(macvtap.HostLinkName("aMvp1")), "the device the failed request made is undone")
			free, err := d.inv.Free("a")
			require.NoError(t, err)
			require.Equal(t, 2, free, "only the pod's slot is claimed")
		})
	}
}

// TestConcurrentAllocatesOfOneDeviceSerialise: requests for one device
// run one after the other, a failing one's undo included, so that a
// request that succeeded always leaves the device with its macvtap. A
// request for the device is started while a failing request for it and
// another device is making the device's macvtap: before, the good request
// went through between the two devices of the failing one (the device was
// claimed already, its macvtap there) and the failing one's undo then
// deleted the macvtap just handed out; then many of both at once.
func TestConcurrentAllocatesOfOneDeviceSerialise(t *testing.T) {
	newDaemon := func(t *testing.T, k *fakeKernel) (*Daemon, *resourceServer) {
		d, err := New(Config{
			Resources: []deviceplugin.Resource{{Name: "a", LowerDevice: "eno1", Mode: macvtap.ModeBridge, Capacity: 3}},
			Kernel:    k, Dir: t.TempDir(), PodResourcesSocket: "-",
		})
		require.NoError(t, err)
		return d, &resourceServer{d: d, res: d.cfg.Resources[0]}
	}
	bad := macvtap.HostLinkName("aMvp2")

	// Go's mutex may let the failing request take the lock back before
	// the waiting one wakes: a few rounds, each of which the serialised
	// daemon passes whatever the order.
	for round := range 5 {
		t.Run(fmt.Sprintf("a good request during a failing one, round %d", round), func(t *testing.T) {
			k := newFakeKernel()
			k.failLink = bad
			d, srv := newDaemon(t, k)
			goodDone := make(chan error, 1)
			var once sync.Once
			k.onEnsure = func(link string) {
				if link == bad {
					// The failing call takes a while, time for the
					// good request to wake up waiting.
					time.Sleep(50 * time.Millisecond)
				}
				if link != macvtap.HostLinkName("aMvp0") {
					return
				}
				once.Do(func() { // the failing request's first device
					go func() {
						_, err := srv.Allocate(context.Background(), allocateReq("aMvp0"))
						goodDone <- err
					}()
					// Give the good request its chance to slip in;
					// serialised, it waits for this one whatever the wait.
					select {
					case err := <-goodDone:
						goodDone <- err
					case <-time.After(100 * time.Millisecond):
					}
				})
			}
			_, err := srv.Allocate(t.Context(), allocateReq("aMvp0", "aMvp2"))
			require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			require.NoError(t, <-goodDone)
			require.True(t, held(t, d, k, "aMvp0"), "the good request's device keeps its macvtap")
		})
	}

	t.Run("many at once", func(t *testing.T) {
		k := newFakeKernel()
		k.failLink = bad
		d, srv := newDaemon(t, k)
		var wg sync.WaitGroup
		var mu sync.Mutex
		good := 0
		for i := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ids := []string{"aMvp0"}
				if i%2 == 1 {
					ids = append(ids, "aMvp2")
				}
				_, err := srv.Allocate(context.Background(), allocateReq(ids...))
				if err == nil {
					mu.Lock()
					good++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 32, good)
		require.True(t, held(t, d, k, "aMvp0"), "the device ends with its macvtap")
	})
}
