package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/testutil/libvirtd"
)

// A relayed guest: the pod, phase1, the hook and every check run in the
// kernel VM as for a nested guest, but the guest's QEMU runs on the host,
// unnested, from the very domain the hook rendered: a guest boots in 2-3 s
// there against 60-100 s nested. Its tap (the name the domain gives) is
// in a namespace of the host's, on a bridge with the kernel VM's second
// NIC; in the VM, the relay holds the pod's tap as QEMU would (opened by
// name, no offloads) and copies each frame between it and that NIC. What
// the guest sees is the pod's tap behind one more wire: the pod's bridge,
// its DHCP server, its addresses and routes are the ones phase1 and the
// hook made, untouched. The domain's files (initramfs, NoCloud image,
// console) live in a directory the VM shares read-write with the host at
// the same path.
//
// The exchange, in that directory: the VM writes "boot" (JSON: the
// domain's path and its tap's name) once the hook ran and the relay is up;
// the host makes the tap, starts virt-qemu-run and writes "booted", or
// "boot-failed" with the error.

// relayEnv names, in the kernel VM, the shared directory of a relayed guest.
const relayEnv = "VIRTNET_E2E_RELAY_DIR"

// relayNIC is the kernel VM's second NIC's tap on the host.
const relayNIC = "vn-relay"

// relayRequest is the VM's "boot" file.
type relayRequest struct {
	Domain string `json:"domain"`
	Tap    string `json:"tap"`
}

// hostRelay is the host's side: the namespace with the bridge, the shared
// directory, and the guest once booted. Only serve's goroutine writes its
// fields until done is closed; close reads them after.
type hostRelay struct {
	dir    string
	ns     *testutil.NS
	stop   chan struct{}
	done   chan struct{}
	v      *exec.Cmd
	vdone  chan error
	out    bytes.Buffer // virt-qemu-run's output
	root   string
	logs   []string
	failed error
}

// newHostRelay makes the namespace (bridge vn-hb, the kernel VM's tap on
// it) and the shared directory, and returns opts changed to use them.
func newHostRelay(t *testing.T, opts kernelvm.Options) kernelvm.Options {
	t.Helper()
	// Not under /tmp, which is the VM's own (a tmpfs over the host's).
	base := filepath.Dir(capsCacheDir())
	require.NoError(t, os.MkdirAll(base, 0o755))
	dir, err := os.MkdirTemp(base, "relay-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	r := &hostRelay{dir: dir, ns: testutil.NewNS(t, "vn-relay"), stop: make(chan struct{}), done: make(chan struct{})}
	require.NoError(t, r.ns.Do(func() error {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "vn-hb"}, MulticastSnooping: new(bool)}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		if err := r.addTap(relayNIC); err != nil {
			return err
		}
		return netlink.LinkSetUp(br)
	}))
	opts.CacheDir = r.dir // no nested libvirt, so no capabilities to keep
	opts.NetNS = r.ns.Path
	opts.Modules = append(append([]string(nil), opts.Modules...), "virtio_net")
	// vnet_hdr=off: QEMU reads whole frames, so the host segments what
	// the guest sent with TSO before it reaches the VM.
	opts.QEMUArgs = append(append([]string(nil), opts.QEMUArgs...),
		"-netdev", "tap,id=relay,ifname="+relayNIC+",script=no,downscript=no,vnet_hdr=off",
		"-device", "virtio-net-pci,netdev=relay")
	set := map[string]string{relayEnv: r.dir}
	for k, v := range opts.SetEnv {
		set[k] = v
	}
	opts.SetEnv = set
	go r.serve()
	t.Cleanup(func() {
		r.close()
		for _, l := range r.logs {
			t.Log(l)
		}
		if t.Failed() && r.out.Len() > 0 {
			t.Logf("host: virt-qemu-run's output:\n%s", r.out.String())
		}
		if r.failed != nil {
			t.Errorf("relay: %v", r.failed)
		}
	})
	return opts
}

// addTap makes a persistent tap on the bridge, up; it runs in r.ns.
func (r *hostRelay) addTap(name string) error {
	tap := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP, Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR}
	if err := netlink.LinkAdd(tap); err != nil {
		return fmt.Errorf("tap %s: %w", name, err)
	}
	br, err := netlink.LinkByName("vn-hb")
	if err != nil {
		return err
	}
	if err := netlink.LinkSetMaster(tap, br); err != nil {
		return fmt.Errorf("tap %s on the bridge: %w", name, err)
	}
	// No learning: a two-port bridge floods every frame to the other
	// port anyway, and a pod's network may send the guest's own frames
	// back (the bridge plugin's hairpin mode reflects its broadcasts),
	// which would teach the bridge the guest's MAC on the relay's port.
	if err := netlink.LinkSetLearning(tap, false); err != nil {
		return fmt.Errorf("tap %s: learning off: %w", name, err)
	}
	return netlink.LinkSetUp(tap)
}

// serve waits for the VM's request (every 50 ms until close) and boots
// the guest.
func (r *hostRelay) serve() {
	defer close(r.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(filepath.Join(r.dir, "boot"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = r.boot(b)
		}
		name, content := "booted", ""
		if err != nil {
			name, content = "boot-failed", err.Error()
			r.failed = err
		}
		_ = os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644)
		return
	}
}

// boot makes the guest's tap and starts virt-qemu-run in the namespace.
func (r *hostRelay) boot(b []byte) error {
	var req relayRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return fmt.Errorf("boot request %q: %w", b, err)
	}
	if !strings.HasPrefix(req.Domain, r.dir+"/") || req.Tap == "" || len(req.Tap) >= unix.IFNAMSIZ {
		return fmt.Errorf("boot request %+v: the domain outside %s or no tap name", req, r.dir)
	}
	if err := r.ns.Do(func() error { return r.addTap(req.Tap) }); err != nil {
		return err
	}
	// Short paths: libvirt puts unix sockets under the root.
	root, err := os.MkdirTemp("", "vn-relay-")
	if err != nil {
		return err
	}
	r.root = root
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "qemu.conf"), []byte(qemuConf), 0o644); err != nil {
		return err
	}
	_, _ = libvirtd.CopyXMLFiles(capsCacheDir(), filepath.Join(root, capsSubdir))
	cmd := exec.Command("virt-qemu-run", "--root", root, "--verbose", req.Domain)
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := nsexec.Do(r.ns.Path, cmd.Start); err != nil {
		return fmt.Errorf("virt-qemu-run: %w", err)
	}
	r.v, r.vdone = cmd, make(chan error, 1)
	go func() { r.vdone <- cmd.Wait() }()
	r.logs = append(r.logs, "host: virt-qemu-run started in "+r.ns.Name)
	return nil
}

// close stops the guest and the server.
func (r *hostRelay) close() {
	close(r.stop)
	<-r.done
	v, vdone := r.v, r.vdone
	if v != nil {
		vr := &virtQemuRun{root: r.root}
		pids := vr.qemuPIDs()
		for _, pid := range pids {
			if cpu, _, err := processCPU(pid); err == nil {
				r.logs = append(r.logs, fmt.Sprintf("host: guest QEMU (pid %d, unnested) CPU time: %s", pid, cpu.Round(10*time.Millisecond)))
			}
		}
		_ = v.Process.Signal(syscall.SIGTERM)
		select {
		case <-vdone:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-v.Process.Pid, syscall.SIGKILL)
			<-vdone
		}
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if r.root != "" {
		_ = os.RemoveAll(r.root)
	}
}

// relayGuest is the VM's side: it opens the pod's tap, copies frames
// between it and the VM's relay NIC, asks the host to boot the domain and
// waits until it did. The relay stops when the test ends.
func relayGuest(t *testing.T, ctx context.Context, pod *testutil.NS, tap, domainXML, dir string) {
	t.Helper()
	var tapFile *os.File
	require.NoError(t, pod.Do(func() (err error) { tapFile, err = openTap(tap); return err }), "open the pod's tap %s", tap)
	nic, err := vmRelayNIC()
	require.NoError(t, err)
	pkt, err := packetSocket(nic)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var toGuest, fromGuest, lost atomic.Int64
	copyFrames := func(dst, src *os.File, n *atomic.Int64) {
		defer wg.Done()
		buf := make([]byte, 65536)
		for {
			m, err := src.Read(buf)
			if err != nil {
				return
			}
			// A frame the other side refuses is lost, as on a wire.
			if _, err := dst.Write(buf[:m]); err != nil {
				lost.Add(1)
				continue
			}
			n.Add(1)
		}
	}
	wg.Add(2)
	go copyFrames(pkt, tapFile, &toGuest)
	go copyFrames(tapFile, pkt, &fromGuest)
	t.Cleanup(func() {
		if t.Failed() { // the pod's links and bridge as the guest left them
			for _, c := range [][]string{{"ip", "-d", "-s", "link"}, {"ip", "addr"}, {"bridge", "fdb", "show"}} {
				var out []byte
				_ = pod.Do(func() error { out, _ = exec.Command(c[0], c[1:]...).CombinedOutput(); return nil })
				t.Logf("pod %s: %s:\n%s", pod.Name, strings.Join(c, " "), out)
			}
		}
		_ = tapFile.Close()
		_ = pkt.Close()
		wg.Wait()
		t.Logf("relay: %d frames to the guest, %d from it, %d refused", toGuest.Load(), fromGuest.Load(), lost.Load())
	})

	b, err := json.Marshal(relayRequest{Domain: domainXML, Tap: tap})
	require.NoError(t, err)
	tmp := filepath.Join(dir, "boot.tmp")
	require.NoError(t, os.WriteFile(tmp, b, 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "boot")))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(filepath.Join(dir, "booted")); err == nil {
			t.Logf("relay: the host booted the domain; frames go between %s in the pod and %s", tap, nic.Attrs().Name)
			return
		}
		if msg, err := os.ReadFile(filepath.Join(dir, "boot-failed")); err == nil {
			t.Fatalf("relay: the host could not boot the domain: %s", msg)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("relay: the host did not boot the domain: %v", ctx.Err())
		case <-tick.C:
		}
	}
}

// openTap opens the existing tap name as QEMU does for a managed='no'
// interface, but without IFF_VNET_HDR: whole frames, no offloads. It runs
// in the tap's namespace.
func openTap(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tap "+name), nil
}

// vmRelayNIC is the kernel VM's relay NIC, made ready: IPv6 off (it sends
// nothing of its own), GRO off (frames reach the relay as they came, none
// merged above the pod's MTU), promiscuous, up.
func vmRelayNIC() (netlink.Link, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if l.Type() != "device" || l.Attrs().Flags&net.FlagLoopback != 0 {
			continue
		}
		name := l.Attrs().Name
		if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+name+"/disable_ipv6", []byte("1"), 0o644); err != nil {
			return nil, err
		}
		if err := setGRO(name, false); err != nil {
			return nil, err
		}
		if err := netlink.SetPromiscOn(l); err != nil {
			return nil, err
		}
		return l, netlink.LinkSetUp(l)
	}
	return nil, errors.New("relay: the kernel VM has no NIC (QEMUArgs without the relay's -netdev?)")
}

// setGRO sets a link's generic receive offload (ETHTOOL_SGRO).
func setGRO(name string, on bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ev := &struct{ cmd, data uint32 }{cmd: 0x2b} // ETHTOOL_SGRO
	if on {
		ev.data = 1
	}
	req := &struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}{data: unsafe.Pointer(ev)}
	copy(req.name[:unix.IFNAMSIZ-1], name)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(req))); errno != 0 {
		return fmt.Errorf("ethtool: GRO of %s: %w", name, errno)
	}
	return nil
}

// packetSocket is a raw packet socket on l: every frame it receives (not
// those it sends), and what is written goes out on l.
func packetSocket(l netlink.Link) (*os.File, error) {
	proto := int(htons(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, proto)
	if err != nil {
		return nil, err
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Attrs().Index}); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "packet "+l.Attrs().Name), nil
}
