package dpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresources "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/virtnet/virtnet/macvtap"
	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

// DefaultPodResourcesSocket is the kubelet's pod-resources socket.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// Defaults of [Config].
const (
	DefaultPoll          = time.Second
	DefaultGiveBackAfter = time.Minute
	// DefaultRPCTimeout bounds one call to the kubelet (Register, List).
	DefaultRPCTimeout = 10 * time.Second
)

// Kernel is what the daemon does to the host's links; [NewNetlinkKernel]
// is the real one.
type Kernel interface {
	// LowerHealthy reports whether the lower device exists, is up and has a
	// carrier; when not, reason says why ("not found", "down", "no carrier").
	LowerHealthy(ctx context.Context, lower string) (healthy bool, reason string, err error)
	// Ensure creates the macvtap of slot (or takes the one there, see the
	// package documentation), sets it up and returns its ifindex.
	Ensure(ctx context.Context, slot deviceplugin.Slot) (ifindex int, err error)
	// Remove deletes the host link; a missing one is success.
	Remove(ctx context.Context, name string) error
	// Exists reports whether the host link exists.
	Exists(ctx context.Context, name string) (bool, error)
}

// Config configures a [Daemon].
type Config struct {
	// Resources are the resources to advertise (non-empty: the caller
	// resolves "[]" with [deviceplugin.Resources]).
	Resources []deviceplugin.Resource
	// Kernel makes and watches the host links.
	Kernel Kernel
	// Dir is the kubelet's device-plugin directory; "" is
	// /var/lib/kubelet/device-plugins/.
	Dir string
	// KubeletSocket is the kubelet's registration socket; "" is
	// Dir/kubelet.sock.
	KubeletSocket string
	// PodResourcesSocket is the kubelet's pod-resources socket, for giving
	// back devices of deleted pods; "" is [DefaultPodResourcesSocket], "-"
	// turns giving back off.
	PodResourcesSocket string
	// Poll is how often the daemon looks at the lower devices, the
	// kubelet's socket and the pod resources; 0 is [DefaultPoll].
	Poll time.Duration
	// GiveBackAfter is how long an allocated device that no live pod holds
	// keeps its host macvtap; 0 is [DefaultGiveBackAfter].
	GiveBackAfter time.Duration
	// Log receives progress; nil discards it.
	Log *slog.Logger
}

// Daemon serves the resources of a [Config]; see the package
// documentation. Make one with [New] and call [Daemon.Run].
type Daemon struct {
	cfg Config
	log *slog.Logger
	inv *deviceplugin.Inventory

	// devMu serialises what changes a device: Allocate's claim, Ensure and
	// record against give-back's check and Remove, so that give-back never
	// deletes a macvtap Allocate has just handed to a new pod.
	devMu sync.Mutex

	mu        sync.Mutex
	health    map[string]string // resource -> "" when healthy, else the reason
	changed   chan struct{}     // closed and replaced when health changes
	allocated map[string]allocation
}

type allocation struct {
	resource string
	at       time.Time
}

// New checks cfg and makes a daemon.
func New(cfg Config) (*Daemon, error) {
	if len(cfg.Resources) == 0 {
		return nil, errors.New("macvtap device plugin: no resources to advertise")
	}
	if cfg.Kernel == nil {
		return nil, errors.New("macvtap device plugin: Config.Kernel is nil")
	}
	inv, err := deviceplugin.NewInventory(cfg.Resources)
	if err != nil {
		return nil, err
	}
	cfg.Dir = cmp.Or(cfg.Dir, pluginapi.DevicePluginPath)
	cfg.KubeletSocket = cmp.Or(cfg.KubeletSocket, filepath.Join(cfg.Dir, filepath.Base(pluginapi.KubeletSocket)))
	cfg.PodResourcesSocket = cmp.Or(cfg.PodResourcesSocket, DefaultPodResourcesSocket)
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.GiveBackAfter <= 0 {
		cfg.GiveBackAfter = DefaultGiveBackAfter
	}
	log := cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	health := make(map[string]string, len(cfg.Resources))
	for _, r := range cfg.Resources {
		health[r.Name] = "not looked at yet"
	}
	return &Daemon{cfg: cfg, log: log, inv: inv, health: health, changed: make(chan struct{}),
		allocated: map[string]allocation{}}, nil
}

// SocketPath returns the path of the socket serving resource name.
func (d *Daemon) SocketPath(name string) string {
	return filepath.Join(d.cfg.Dir, "virtnet-macvtap-"+name+".sock")
}

// EnvName is the environment variable Allocate sets to the device IDs of
// resource name: MACVTAP_NETWORK_KUBEVIRT_IO_<NAME>.
func EnvName(name string) string {
	return "MACVTAP_NETWORK_KUBEVIRT_IO_" + strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToUpper(name))
}

// Run serves until ctx ends, then stops serving and removes its sockets.
// It returns nil then; it fails early only when the device-plugin
// directory cannot be used.
func (d *Daemon) Run(ctx context.Context) error {
	if st, err := os.Stat(d.cfg.Dir); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return fmt.Errorf("macvtap device plugin: device-plugin directory %q: %w", d.cfg.Dir, err)
	}
	d.adopt(ctx)
	var srv *serving
	defer func() { srv.stop() }()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		d.checkHealth(ctx)
		if why := srv.stale(); why != "" {
			srv.stop()
			srv = nil
			s, err := d.serve(ctx)
			if err != nil {
				d.log.Warn("macvtap device plugin: not registered; retrying", "why", why, "err", err)
			} else {
				d.log.Info("macvtap device plugin: registered with the kubelet", "why", why, "resources", len(s.servers))
				srv = s
			}
		}
		d.giveBack(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// serving is one generation of resource servers, registered with one
// kubelet (the inode of its socket).
type serving struct {
	d       *Daemon
	servers []*grpc.Server
	sockets []string
	kubelet uint64
}

// stale says why srv must be replaced, or "".
func (srv *serving) stale() string {
	if srv == nil {
		return "start"
	}
	ino, err := inode(srv.d.cfg.KubeletSocket)
	switch {
	case err != nil:
		// No kubelet: keep serving, register when it is back.
		return ""
	case ino != srv.kubelet:
		return "kubelet socket recreated (kubelet restarted)"
	}
	for _, s := range srv.sockets {
		if _, err := os.Lstat(s); err != nil {
			return "own socket " + filepath.Base(s) + " removed"
		}
	}
	return ""
}

func (srv *serving) stop() {
	if srv == nil {
		return
	}
	for _, s := range srv.servers {
		s.Stop()
	}
	for _, p := range srv.sockets {
		_ = os.Remove(p)
	}
}

func inode(path string) (uint64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no inode")
	}
	return sys.Ino, nil
}

// serve starts one server per resource and registers each with the
// kubelet; on failure it stops what it started.
func (d *Daemon) serve(ctx context.Context) (_ *serving, err error) {
	ino, err := inode(d.cfg.KubeletSocket)
	if err != nil {
		return nil, fmt.Errorf("kubelet socket: %w", err)
	}
	srv := &serving{d: d, kubelet: ino}
	defer func() {
		if err != nil {
			srv.stop()
		}
	}()
	for _, r := range d.cfg.Resources {
		path := d.SocketPath(r.Name)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove old socket: %w", err)
		}
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", r.ResourceName(), err)
		}
		s := grpc.NewServer()
		pluginapi.RegisterDevicePluginServer(s, &resourceServer{d: d, res: r})
		srv.servers = append(srv.servers, s)
		srv.sockets = append(srv.sockets, path)
		go func() { _ = s.Serve(l) }()
	}
	conn, err := grpc.NewClient("unix://"+d.cfg.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial kubelet: %w", err)
	}
	defer func() { _ = conn.Close() }()
	client := pluginapi.NewRegistrationClient(conn)
	for i, r := range d.cfg.Resources {
		rctx, cancel := context.WithTimeout(ctx, DefaultRPCTimeout)
		_, err := client.Register(rctx, &pluginapi.RegisterRequest{
			Version:      pluginapi.Version,
			Endpoint:     filepath.Base(srv.sockets[i]),
			ResourceName: r.ResourceName(),
			Options:      &pluginapi.DevicePluginOptions{},
		})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("register %s: %w", r.ResourceName(), err)
		}
	}
	return srv, nil
}

// checkHealth looks at every lower device and wakes the ListAndWatch
// streams when one changed.
func (d *Daemon) checkHealth(ctx context.Context) {
	next := make(map[string]string, len(d.cfg.Resources))
	for _, r := range d.cfg.Resources {
		ok, reason, err := d.cfg.Kernel.LowerHealthy(ctx, r.LowerDevice)
		if err != nil {
			reason = err.Error()
		} else if ok {
			reason = ""
		}
		next[r.Name] = reason
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	changed := false
	for _, r := range d.cfg.Resources {
		if d.health[r.Name] == next[r.Name] {
			continue
		}
		changed = true
		if next[r.Name] == "" {
			d.log.Info("macvtap device plugin: devices healthy", "resource", r.ResourceName(), "lowerDevice", r.LowerDevice)
		} else {
			d.log.Warn("macvtap device plugin: devices unhealthy", "resource", r.ResourceName(), "lowerDevice", r.LowerDevice, "why", next[r.Name])
		}
		d.health[r.Name] = next[r.Name]
	}
	if changed {
		close(d.changed)
		d.changed = make(chan struct{})
	}
}

// adopt counts the host macvtaps of the resources' slots as allocated now
// (a previous run of the daemon made them), so that they are given back
// when no pod holds them.
func (d *Daemon) adopt(ctx context.Context) {
	now := time.Now()
	for _, r := range d.cfg.Resources {
		ids, _ := d.inv.DeviceIDs(r.Name)
		for _, id := range ids {
			s, err := d.inv.Claim(r.Name, id)
			if err != nil {
				continue
			}
			ok, err := d.cfg.Kernel.Exists(ctx, s.HostLink)
			if err != nil || !ok {
				_ = d.inv.Release(r.Name, id)
				continue
			}
			d.mu.Lock()
			d.allocated[id] = allocation{resource: r.Name, at: now}
			d.mu.Unlock()
			d.log.Info("macvtap device plugin: found a host macvtap of an earlier run", "deviceID", id, "link", s.HostLink)
		}
	}
}

// giveBack deletes the host macvtaps of devices no live pod holds; see the
// package documentation.
func (d *Daemon) giveBack(ctx context.Context) {
	if d.cfg.PodResourcesSocket == "-" {
		return
	}
	if _, err := os.Stat(d.cfg.PodResourcesSocket); err != nil {
		return
	}
	// Ask the kubelet only when some allocation is old enough to give back.
	now := time.Now()
	d.mu.Lock()
	due := false
	for _, a := range d.allocated {
		due = due || now.Sub(a.at) > d.cfg.GiveBackAfter
	}
	d.mu.Unlock()
	if !due {
		return
	}
	assigned, err := d.assigned(ctx)
	if err != nil {
		d.log.Warn("macvtap device plugin: cannot list pod resources; nothing given back", "err", err)
		return
	}
	d.mu.Lock()
	var held []string
	stale := map[string]time.Time{}
	for id, a := range d.allocated {
		switch {
		case assigned[id]:
			held = append(held, id)
		case now.Sub(a.at) > d.cfg.GiveBackAfter:
			stale[id] = a.at
		}
	}
	d.mu.Unlock()
	for _, id := range held {
		// A live pod holds it; once its macvtap has left the host (moved
		// into the pod, where it dies with the pod) there is nothing left
		// to give back: stop tracking it.
		d.forgetHeld(ctx, id)
	}
	for id, at := range stale {
		// Only the allocation seen stale: an Allocate of the same device
		// for a new pod since then (the pod-resources list predates it)
		// has a later time and keeps its macvtap.
		d.release(ctx, id, at, "no live pod holds it")
	}
}

// forgetHeld stops tracking id, which a live pod holds, once its macvtap
// has left the host; under devMu, so that it never frees the slot of an
// Allocate under way.
func (d *Daemon) forgetHeld(ctx context.Context, id string) {
	d.devMu.Lock()
	defer d.devMu.Unlock()
	if ok, err := d.cfg.Kernel.Exists(ctx, macvtap.HostLinkName(id)); err != nil || ok {
		return
	}
	d.mu.Lock()
	a, ok := d.allocated[id]
	delete(d.allocated, id)
	d.mu.Unlock()
	if ok {
		_ = d.inv.Release(a.resource, id)
	}
}

// release deletes the host macvtap of id and frees its slot, when id is
// still the allocation made at at (any allocation when at is zero).
func (d *Daemon) release(ctx context.Context, id string, at time.Time, why string) {
	d.devMu.Lock()
	defer d.devMu.Unlock()
	d.mu.Lock()
	a, ok := d.allocated[id]
	if ok && (at.IsZero() || a.at.Equal(at)) {
		delete(d.allocated, id)
	} else {
		ok = false
	}
	d.mu.Unlock()
	if !ok {
		return
	}
	link := macvtap.HostLinkName(id)
	if err := d.cfg.Kernel.Remove(ctx, link); err != nil {
		d.log.Warn("macvtap device plugin: cannot delete host macvtap", "deviceID", id, "link", link, "err", err)
	}
	_ = d.inv.Release(a.resource, id)
	d.log.Info("macvtap device plugin: device given back", "deviceID", id, "link", link, "why", why)
}

// allocate claims the slots, makes their host macvtaps and records the
// allocations, all under devMu: one Allocate at a time changes devices,
// so that a request for a device waits until another request for it has
// ended, its undo included, and give-back never deletes a macvtap an
// Allocate has just handed to a new pod (see release).
//
// A failure undoes only what this call made: the slots it claimed (and
// their macvtaps). A slot already claimed (the kubelet allocating a device
// again, say after its restart, or a request naming a device a pod holds)
// belongs to its earlier allocation, which keeps it and its macvtap.
// Allocations are recorded only once every slot is ready.
func (d *Daemon) allocate(ctx context.Context, resource string, slots []deviceplugin.Slot) (_ []int, err error) {
	d.devMu.Lock()
	defer d.devMu.Unlock()
	var claimed []deviceplugin.Slot // by this call
	defer func() {
		if err == nil {
			return
		}
		for _, s := range slices.Backward(claimed) {
			if rerr := d.cfg.Kernel.Remove(context.WithoutCancel(ctx), s.HostLink); rerr != nil {
				d.log.Warn("macvtap device plugin: cannot undo the host macvtap of a failed Allocate", "deviceID", s.DeviceID, "link", s.HostLink, "err", rerr)
			}
			_ = d.inv.Release(resource, s.DeviceID)
		}
	}()
	idx := make([]int, len(slots))
	for i, slot := range slots {
		switch _, err := d.inv.Claim(resource, slot.DeviceID); {
		case err == nil:
			claimed = append(claimed, slot)
		case !errors.Is(err, deviceplugin.ErrInUse):
			return nil, status.Errorf(codes.Internal, "macvtap Allocate: %v", err)
		}
		if idx[i], err = d.cfg.Kernel.Ensure(ctx, slot); err != nil {
			return nil, status.Errorf(codes.Unavailable, "macvtap Allocate %s: create %s on %s: %v", slot.DeviceID, slot.HostLink, slot.LowerDevice, err)
		}
	}
	now := time.Now()
	d.mu.Lock()
	for _, slot := range slots {
		d.allocated[slot.DeviceID] = allocation{resource: resource, at: now}
	}
	d.mu.Unlock()
	return idx, nil
}

// assigned lists the device IDs the kubelet has assigned to live pods.
func (d *Daemon) assigned(ctx context.Context) (map[string]bool, error) {
	conn, err := grpc.NewClient("unix://"+d.cfg.PodResourcesSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	lctx, cancel := context.WithTimeout(ctx, DefaultRPCTimeout)
	defer cancel()
	resp, err := podresources.NewPodResourcesListerClient(conn).List(lctx, &podresources.ListPodResourcesRequest{})
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, r := range d.cfg.Resources {
		ours[r.ResourceName()] = true
	}
	out := map[string]bool{}
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, dev := range c.GetDevices() {
				if ours[dev.GetResourceName()] {
					for _, id := range dev.GetDeviceIds() {
						out[id] = true
					}
				}
			}
		}
	}
	return out, nil
}

// resourceServer is the DevicePlugin service of one resource.
type resourceServer struct {
	pluginapi.UnimplementedDevicePluginServer
	d   *Daemon
	res deviceplugin.Resource
}

// GetDevicePluginOptions: no PreStartContainer, no preferred allocation.
func (s *resourceServer) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the devices, then again whenever health changes.
func (s *resourceServer) ListAndWatch(_ *pluginapi.Empty, stream grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	ids, err := s.d.inv.DeviceIDs(s.res.Name)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	last := "-"
	for {
		s.d.mu.Lock()
		why, wake := s.d.health[s.res.Name], s.d.changed
		s.d.mu.Unlock()
		if why != last {
			health := pluginapi.Healthy
			if why != "" {
				health = pluginapi.Unhealthy
			}
			resp := &pluginapi.ListAndWatchResponse{Devices: make([]*pluginapi.Device, len(ids))}
			for i, id := range ids {
				resp.Devices[i] = &pluginapi.Device{ID: id, Health: health}
			}
			if err := stream.Send(resp); err != nil {
				return err
			}
			last = why
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-wake:
		}
	}
}

// GetPreferredAllocation is not offered (GetDevicePluginOptions says so).
func (s *resourceServer) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

// PreStartContainer is not needed (GetDevicePluginOptions says so).
func (s *resourceServer) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

// Allocate creates the macvtaps; see the package documentation. Every
// device ID is looked up before anything is made, and a failure undoes
// only what this request made ([Daemon.allocate]).
func (s *resourceServer) Allocate(ctx context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	d := s.d
	var slots []deviceplugin.Slot
	for _, creq := range req.GetContainerRequests() {
		for _, id := range creq.GetDevicesIds() {
			slot, err := d.inv.Slot(s.res.Name, id)
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "macvtap Allocate: %v", err)
			}
			slots = append(slots, slot)
		}
	}
	idx, err := d.allocate(ctx, s.res.Name, slots)
	if err != nil {
		return nil, err
	}
	resp := &pluginapi.AllocateResponse{}
	k := 0 // index into slots and idx, in request order
	for _, creq := range req.GetContainerRequests() {
		cresp := &pluginapi.ContainerAllocateResponse{}
		for range creq.GetDevicesIds() {
			slot, tap := slots[k], "/dev/tap"+strconv.Itoa(idx[k])
			k++
			cresp.Devices = append(cresp.Devices, &pluginapi.DeviceSpec{ContainerPath: tap, HostPath: tap, Permissions: "rw"})
			d.log.Info("macvtap device plugin: allocated", "deviceID", slot.DeviceID, "link", slot.HostLink, "lowerDevice", slot.LowerDevice, "mode", slot.Mode, "tap", tap)
		}
		cresp.Envs = map[string]string{EnvName(s.res.Name): strings.Join(creq.GetDevicesIds(), ",")}
		resp.ContainerResponses = append(resp.ContainerResponses, cresp)
	}
	return resp, nil
}
