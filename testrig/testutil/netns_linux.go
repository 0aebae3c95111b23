package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nlhandle"
	"github.com/virtnet/virtnet/internal/nsexec"
)

// NS is a throwaway named network namespace (/var/run/netns/<Name>).
type NS struct {
	Name string
	Path string
	// Handle is a netlink handle inside the namespace for assertions.
	Handle *netlink.Handle
}

// Do runs fn inside the namespace on a locked thread (sockets created in
// fn stay in the namespace).
func (ns *NS) Do(fn func() error) error { return nsexec.Do(ns.Path, fn) }

// NewNS creates a named network namespace with "lo" up and removes it when
// the test ends. It skips (see [Skip]) without root.
func NewNS(tb testing.TB, prefix string) *NS {
	tb.Helper()
	RequireRoot(tb)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := prefix + "-" + hex.EncodeToString(b[:])
	// Registered before the namespace exists, so that it goes whatever
	// happens next (a failed creation, a failed test).
	var ino uint64
	tb.Cleanup(func() { removeNS(tb, name, ino) })
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		h, err := netns.NewNamed(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		h.Close()
		if err := netns.Set(orig); err != nil {
			errc <- err // thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		errc <- nil
	}()
	require.NoError(tb, <-errc, "create network namespace %s", name)
	ns := &NS{Name: name, Path: "/var/run/netns/" + name}
	var st unix.Stat_t
	require.NoError(tb, unix.Stat(ns.Path, &st))
	ino = st.Ino
	nh, err := nlhandle.Open(ns.Path)
	require.NoError(tb, err)
	ns.Handle = nh
	tb.Cleanup(nh.Close)
	lo, err := nh.LinkByName("lo")
	require.NoError(tb, err)
	require.NoError(tb, nh.LinkSetUp(lo))
	return ns
}

// Pod is a pod-like network namespace as a CNI plugin leaves it. The
// hand-made one ([NewPodWith]) is a veth named PodLink (eth0) holding
// PodIP/24 with MTU 1440 and a default route via Gateway, whose peer sits
// in Node holding Gateway/24. Those made by the reference CNI plugins
// ([NewFlannelPod], [NewKindnetPod], …, see [CNINetwork]) are whatever the
// plugin left, described by the same fields.
type Pod struct {
	Pod, Node *NS
	PodLink   string
	PodIP     net.IP
	Gateway   net.IP
	PodMAC    net.HardwareAddr
	MTU       int
	// NodeLink is the peer's name in Node (the host side of the veth).
	NodeLink string
	// PodNet is PodIP with the prefix the pod link holds; PodIPv6,
	// PodNetV6 and GatewayV6 the same for IPv6 (nil without).
	PodNet             *net.IPNet
	PodIPv6, GatewayV6 net.IP
	PodNetV6           *net.IPNet
	NodeIP, NodeIPv6   net.IP // an address of Node the pod reaches (for servers there)
	Network            *CNINetwork
	ContainerID        string          // the CNI container ID (CNI pods)
	Result             *current.Result // the CNI ADD result for PodLink (nil when hand-made)
}

// PodConfig selects the pod link's name and addresses; the zero value is
// eth0 with 10.244.1.7/24 via 10.244.1.1, MTU 1440.
type PodConfig struct {
	Link    string
	CIDR    string // pod address with prefix, "" for none (IPAM off)
	Gateway string
	MTU     int
	// NoIPAM leaves the pod link without an IPv4 address (layer 2 only).
	NoIPAM bool
	// IPv6 adds an IPv6 address (with prefix) and a default route via
	// GatewayV6 when set.
	IPv6, GatewayV6 string
}

// NewPod creates the pod and node namespaces with the default PodConfig.
func NewPod(tb testing.TB) *Pod { return NewPodWith(tb, PodConfig{}) }

// NewPodWith creates a pod namespace and a node namespace joined by a veth.
func NewPodWith(tb testing.TB, cfg PodConfig) *Pod {
	tb.Helper()
	if cfg.Link == "" {
		cfg.Link = "eth0"
	}
	if cfg.CIDR == "" && cfg.Gateway == "" && !cfg.NoIPAM {
		cfg.CIDR, cfg.Gateway = "10.244.1.7/24", "10.244.1.1"
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1440
	}
	pod := NewNS(tb, "vn-pod")
	node := NewNS(tb, "vn-node")
	p := &Pod{Pod: pod, Node: node, PodLink: cfg.Link, MTU: cfg.MTU, NodeLink: "veth-" + pod.Name[len(pod.Name)-8:]}
	AddVeth(tb, node, p.NodeLink, pod, cfg.Link, cfg.MTU)
	podL, err := pod.Handle.LinkByName(cfg.Link)
	require.NoError(tb, err)
	p.PodMAC = podL.Attrs().HardwareAddr
	nodeL, err := node.Handle.LinkByName(p.NodeLink)
	require.NoError(tb, err)
	if cfg.Gateway != "" {
		_, gwNet, err := net.ParseCIDR(cfg.CIDR)
		require.NoError(tb, err)
		p.Gateway = net.ParseIP(cfg.Gateway)
		gw := &net.IPNet{IP: p.Gateway, Mask: gwNet.Mask}
		require.NoError(tb, node.Handle.AddrAdd(nodeL, &netlink.Addr{IPNet: gw}))
	}
	if cfg.CIDR != "" {
		addr, err := netlink.ParseAddr(cfg.CIDR)
		require.NoError(tb, err)
		p.PodIP, p.PodNet, p.NodeIP = addr.IP, addr.IPNet, p.Gateway
		require.NoError(tb, pod.Handle.AddrAdd(podL, addr))
		require.NoError(tb, pod.Handle.RouteAdd(&netlink.Route{LinkIndex: podL.Attrs().Index, Gw: p.Gateway}))
	}
	if cfg.IPv6 != "" {
		addr, err := netlink.ParseAddr(cfg.IPv6)
		require.NoError(tb, err)
		addr.Flags = unix.IFA_F_NODAD
		require.NoError(tb, pod.Handle.AddrAdd(podL, addr))
		p.PodIPv6, p.PodNetV6 = addr.IP, addr.IPNet
		if cfg.GatewayV6 != "" {
			gw := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(cfg.GatewayV6), Mask: addr.Mask}, Flags: unix.IFA_F_NODAD}
			require.NoError(tb, node.Handle.AddrAdd(nodeL, gw))
			require.NoError(tb, pod.Handle.RouteAdd(&netlink.Route{LinkIndex: podL.Attrs().Index, Gw: net.ParseIP(cfg.GatewayV6)}))
			p.GatewayV6, p.NodeIPv6 = net.ParseIP(cfg.GatewayV6), net.ParseIP(cfg.GatewayV6)
		}
	}
	return p
}

// AddVeth creates a veth pair with one end (aName) in a and the other
// (bName) in b, both up, with the given MTU.
func AddVeth(tb testing.TB, a *NS, aName string, b *NS, bName string, mtu int) {
	tb.Helper()
	bns, err := netns.GetFromName(b.Name)
	require.NoError(tb, err)
	defer bns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = aName, mtu
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: bName, PeerNamespace: netlink.NsFd(bns)}
	require.NoError(tb, a.Handle.LinkAdd(veth), "add veth %s/%s", aName, bName)
	la, err := a.Handle.LinkByName(aName)
	require.NoError(tb, err)
	require.NoError(tb, a.Handle.LinkSetUp(la))
	lb, err := b.Handle.LinkByName(bName)
	require.NoError(tb, err)
	require.NoError(tb, b.Handle.LinkSetMTU(lb, mtu))
	require.NoError(tb, b.Handle.LinkSetUp(lb))
}

// removeNS kills every process left in the namespace (inode ino; 0 when
// it was never stat'ed), waits for them to go, then unmounts and removes
// its name; a failure is reported, since the namespace then leaks.
func removeNS(tb testing.TB, name string, ino uint64) {
	if ino != 0 {
		deadline := time.Now().Add(2 * time.Second)
		for try := 0; try < 100 && time.Now().Before(deadline); try++ { // bounded
			pids := pidsInNetns(ino)
			if len(pids) == 0 {
				break
			}
			for _, pid := range pids {
				killAndWait(pid, time.Until(deadline))
			}
		}
		if pids := pidsInNetns(ino); len(pids) > 0 {
			tb.Errorf("processes %v still run in network namespace %s", pids, name)
		}
	}
	err := netns.DeleteNamed(name)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		tb.Errorf("remove network namespace %s: %v", name, err)
	}
	// EINVAL: not a mount point (creation failed half-way): the file
	// may still be there.
	if err := os.Remove("/var/run/netns/" + name); err != nil && !os.IsNotExist(err) {
		tb.Errorf("remove network namespace %s: %v", name, err)
	}
}

// pidsInNetns lists the processes (other than this one) whose network
// namespace is the nsfs inode ino.
// killAndWait sends SIGKILL to pid and waits, at most d, for it to exit:
// its pidfd becomes readable then (any process, not only a child of this
// one). Without pidfds (before Linux 5.3) it sleeps 10 ms instead.
func killAndWait(pid int, d time.Duration) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ESRCH) { // ESRCH: gone already
			_ = unix.Kill(pid, unix.SIGKILL)
			time.Sleep(10 * time.Millisecond)
		}
		return
	}
	defer unix.Close(fd)
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return // exited meanwhile (ESRCH)
	}
	ms := int(d.Milliseconds())
	if ms < 1 {
		ms = 1
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for try := 0; try < 10; try++ { // bounded: EINTR retries
		if _, err := unix.Poll(fds, ms); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

func pidsInNetns(ino uint64) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) == nil && st.Ino == ino {
			out = append(out, pid)
		}
	}
	return out
}
