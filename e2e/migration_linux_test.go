package e2e

import (
	"context"
	"encoding"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/migration"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/testutil/libvirtd"
)

// migrationVMI: masquerade on the pod network, TCP 8080 and 8081 (the
// guest's servers) and UDP 9999 (nothing listens: the guest's kernel answers with
// a port unreachable, the downtime probe) declared, no disks.
const migrationVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: migrating
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-000000000024
spec:
  domain:
    resources:
      requests:
        memory: 128Mi
    devices:
      interfaces:
      - name: default
        masquerade: {}
        ports:
        - {name: http, protocol: TCP, port: 8080}
        - {name: renew, protocol: TCP, port: 8081}
        - {name: probe, protocol: UDP, port: 9999}
  networks:
  - name: default
    pod: {}
`

// launcher is one pod's side of the migration: its libvirtd (in the pod
// namespace, as KubeVirt's launcher runs it), phase1's records, the
// preStartHook's DHCP server and domain.
type launcher struct {
	pod     *testutil.Pod
	d       *libvirtd.Daemon
	store   *cache.Store
	running *prestart.Running
	console string
}

// prepare runs phase1 (as a migration target when target is set) and the
// preStartHook for the pod; it returns phase1's time.
func (l *launcher) prepare(t *testing.T, ctx context.Context, vmi *api.VMI, target bool, log *slog.Logger) time.Duration {
	t.Helper()
	var err error
	l.store, err = cache.New(filepath.Join(l.d.Dir, "cache"))
	require.NoError(t, err)
	t0 := time.Now()
	require.NoError(t, phase1.Run(ctx, vmi, l.pod.Pod.Path, l.store, phase1.Options{
		Logger: log, MigrationTarget: target, TapOwner: phase1.TapOwnerUID(l.d.UID)}))
	took := time.Since(t0)
	dirs := domxml.Options{
		PrivateDir: l.d.Path("private"), EphemeralDir: l.d.Path("ephemeral"),
		ContainerDiskDir: l.d.Path("container-disks"), EmptyDiskDir: l.d.Path("empty-disks"),
	}
	resolv := l.d.WriteFile("resolv.conf", []byte(podResolvConf))
	hook := &prestart.Hook{VMI: vmi, Store: l.store, Dirs: dirs, ResolvConf: resolv,
		InterfaceType: "ethernet", NetNS: l.pod.Pod.Path, Logger: log}
	l.running, err = hook.Run(ctx)
	require.NoError(t, err)
	pod := l.pod.Pod.Name
	t.Cleanup(func() { require.NoError(t, l.running.Stop(), "the hook's DHCP servers of pod %s stop cleanly", pod) })
	l.console = l.d.Path("console.log")
	return took
}

// boot builds the busybox guest's initramfs for gs, adapts the hook's
// domain to TCG and starts it on the launcher's daemon; it returns the
// domain's name and its console, logged when the test fails.
func (l *launcher) boot(t *testing.T, ctx context.Context, assets string, gs guestScript) (string, *console) {
	t.Helper()
	kernel := l.d.Path("vmlinux")
	linkOrCopy(t, guestKernel(assets), kernel)
	initrd := l.d.Path("initramfs.cpio")
	for _, m := range guestModules {
		gs.modules = append(gs.modules, filepath.Join(assets, "modules", m+".ko"))
	}
	require.NoError(t, writeInitramfs(initrd, guestFiles{
		busybox: filepath.Join(assets, "busybox"),
		modules: gs.modules,
		files:   guestFilesFor(gs, nil),
	}))
	dom := l.running.Domain()
	forTCG(dom, kernel, initrd, l.console)
	x, err := dom.Marshal()
	require.NoError(t, err)
	name, err := l.d.Create(ctx, x)
	require.NoError(t, err, l.d.Log())
	c := &console{path: l.console}
	t.Cleanup(func() {
		if t.Failed() {
			_ = c.poll()
			t.Logf("guest console (%s):\n%s", l.console, strings.Join(c.lines, "\n"))
		}
	})
	return name, c
}

// targetXML is the destination domain: migration.TargetDomain of the
// source's migratable XML and the target pod's domain, with the console
// in the target's directory; it returns the file for virsh migrate --xml.
func (l *launcher) targetXML(t *testing.T, vmi *api.VMI, srcDom *libvirtxml.Domain) (string, *migration.Target) {
	t.Helper()
	dest, err := migration.TargetDomain(vmi, nil, srcDom, l.running.Domain(), l.store)
	require.NoError(t, err)
	for i := range dest.Domain.Devices.Serials {
		dest.Domain.Devices.Serials[i].Source.File.Path = l.console
	}
	for i := range dest.Domain.Devices.Consoles {
		dest.Domain.Devices.Consoles[i].Source.File.Path = l.console
	}
	x, err := dest.Domain.Marshal()
	require.NoError(t, err)
	return l.d.WriteFile("dest.xml", []byte(x)), dest
}

// TestLiveMigration migrates a running busybox guest (masquerade) live
// from pod A to pod B, two pods of one CNI network on one node namespace,
// each with its own libvirtd (own directories, host UUID) as KubeVirt's
// launchers have, over a unix socket (KubeVirt's transport). The target
// pod gets phase1 in target mode, the preStartHook, and the domain
// migration.TargetDomain makes of the source's migratable XML.
//
// Checks: after the switch-over the node reaches the guest through pod
// B's IP on the declared port, and the guest still holds 10.0.2.2 (its
// server says so) behind the same MAC; the guest renews its lease from
// pod B's DHCP server; QEMU's self-announce (RARP, or the guest's ARP)
// with the VM's MAC is seen on pod B's bridge; a server on pod B's
// loopback at libvirt's migration port 49152 is reached, not DNATed to
// the guest. Figures: the downtime a 10 ms UDP probe from the node sees
// (last answer through pod A to first through pod B) against QEMU's own
// (virsh domjobinfo --completed), and phase1's time in the target pod.
func TestLiveMigration(t *testing.T) {
	if raceDetector {
		t.Skip("-race: the guest under TCG is too slow with the race detector (run without -race)")
	}
	if testing.Short() {
		t.Skip("-short: boots a guest under TCG and migrates it")
	}
	assets := requireGuest(t)
	ctx, cancel := context.WithTimeout(context.Background(), guestTimeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))

	node := testutil.NewNS(t, "vn-node")
	network := testutil.NewCNINetwork(t, node, testutil.FlannelSpec)
	a := &launcher{pod: network.AddPod(t)}
	b := &launcher{pod: network.AddPod(t)}
	a.d = libvirtd.Start(t, libvirtd.Options{NetNS: a.pod.Pod.Path, HostUUID: "5b7e1c1e-e2e0-4a1b-9c55-00000000a024", CapsCache: libvirtd.DefaultCapsCache()})
	b.d = libvirtd.Start(t, libvirtd.Options{NetNS: b.pod.Pod.Path, HostUUID: "5b7e1c1e-e2e0-4a1b-9c55-00000000b024", CapsCache: libvirtd.DefaultCapsCache()})

	// The source: phase1, the hook, the guest.
	vmi, err := api.Load([]byte(migrationVMI))
	require.NoError(t, err)
	a.prepare(t, ctx, vmi, false, log)
	nodeAddr, nodeSeen := serveSource(t, node, a.pod.NodeIP)
	start := time.Now()
	name, c := a.boot(t, ctx, assets, guestScript{ping: "10.0.2.1", node: nodeAddr,
		// Answer every probe: no rate limit on port unreachables.
		extra: []string{"echo 0 >/proc/sys/net/ipv4/icmp_ratelimit; m probe-ready"}})
	wait := func(c *console, whats ...string) string {
		t.Helper()
		line, err := waitConsole(ctx, c, whats...)
		require.NoError(t, err)
		t.Logf("guest: %s", line)
		return line
	}
	line := wait(c, "lease", "lease-failed")
	require.True(t, strings.HasPrefix(line, "lease ip=10.0.2.2 "), line)
	t.Logf("guest lease in pod A %s after libvirtd A created the domain", time.Since(start).Round(100*time.Millisecond))
	wait(c, "source")
	select {
	case host := <-nodeSeen:
		require.Equal(t, a.pod.PodIP.String(), host)
	case <-ctx.Done():
		t.Fatal("the node's server saw no connection")
	}
	wait(c, "probe-ready")
	g := &guest{t: t, ctx: ctx}
	require.Equal(t, "hello from migrating ip=10.0.2.2/24", g.dial(node, a.pod.PodIP, 8080))

	// The target: the VMI as KubeVirt hands it over, with the source's
	// status.interfaces; phase1 in target mode; the hook; the domain.
	live, err := a.d.Virsh(ctx, "dumpxml", "--migratable", name)
	require.NoError(t, err)
	srcDom := &libvirtxml.Domain{}
	require.NoError(t, srcDom.Unmarshal(live))
	require.Len(t, srcDom.Devices.Interfaces, 1)
	vmMAC := srcDom.Devices.Interfaces[0].MAC.Address
	target, err := api.Load([]byte(migrationVMI))
	require.NoError(t, err)
	target.Status.Interfaces = []api.InterfaceStatus{{Name: "default", MAC: vmMAC, IP: "10.0.2.2", InfoSource: "domain"}}
	phase1Target := b.prepare(t, ctx, target, true, log)
	destFile, dest := b.targetXML(t, target, srcDom)
	require.Empty(t, dest.Refresh, "masquerade needs no link refresh")

	// Watch: the probe from the node, the announce on pod B's bridge.
	rec, err := b.store.ReadInterface(target.Metadata.UID, "default")
	require.NoError(t, err)
	require.Equal(t, vmMAC, recText(rec.MAC))
	probe := startProbe(t, node, []net.IP{a.pod.PodIP, b.pod.PodIP}, 9999, 10*time.Millisecond)
	announce := watchAnnounce(t, b.pod.Pod, rec.Bridge, vmMAC)
	require.Eventually(t, func() bool { return probe.answers(a.pod.PodIP) > 5 }, 30*time.Second, 50*time.Millisecond,
		"the probe through pod A must be answered before the migration")

	t0 := time.Now()
	out, err := a.d.Virsh(ctx, "migrate", "--live", name, b.d.URI,
		"--migrateuri", "unix://"+b.d.Path("migration.sock"), "--xml", destFile)
	require.NoError(t, err, "%s\n%s\n%s", out, a.d.Log(), b.d.Log())
	migrateTook := time.Since(t0)
	require.NoError(t, a.running.Stop(), "the source launcher exits after the switch-over")
	state, err := b.d.Virsh(ctx, "domstate", name)
	require.NoError(t, err)
	require.Equal(t, "running", strings.TrimSpace(state))
	job, err := b.d.Virsh(ctx, "domjobinfo", name, "--completed")
	if err != nil {
		t.Logf("domjobinfo on the target: %v", err)
	}
	qemuDowntime := jobField(job, "Total downtime")
	require.Eventually(t, func() bool { return probe.answers(b.pod.PodIP) > 20 }, 60*time.Second, 50*time.Millisecond,
		"the probe through pod B must be answered after the migration")
	probe.stop()
	downtime, lastA, firstB := probe.gap(a.pod.PodIP, b.pod.PodIP)
	require.Greater(t, firstB, lastA, "no answer through pod B before the last one through pod A")
	t.Logf("FIGURE migration (1 run): virsh migrate %v; network downtime seen by the node's 10 ms UDP probe %v (the guest's last port unreachable via pod A → its first via pod B); QEMU's reported downtime %s; phase1 in the target pod %v",
		migrateTook.Round(time.Millisecond), downtime.Round(time.Millisecond), qemuDowntime, phase1Target.Round(time.Millisecond))

	cB := &console{path: b.console}
	t.Cleanup(func() {
		if t.Failed() {
			_ = cB.poll()
			t.Logf("guest console after the migration (%s):\n%s", b.console, strings.Join(cB.lines, "\n"))
			if out, err := b.d.Virsh(context.Background(), "domstate", name, "--reason"); err == nil {
				t.Logf("domain on pod B: %s", out)
			}
		}
	})

	// After the switch-over: the node reaches the guest through pod B.
	require.Equal(t, "hello from migrating ip=10.0.2.2/24", g.dial(node, b.pod.PodIP, 8080))
	renewal := g.dial(node, b.pod.PodIP, 8081)
	require.True(t, strings.HasPrefix(renewal, "renew ip=10.0.2.2 "), "the guest renews its lease from pod B's DHCP server: %q", renewal)
	t.Logf("renewal through pod B: %q", renewal)
	liveB, err := b.d.Virsh(ctx, "dumpxml", name)
	require.NoError(t, err)
	domB := &libvirtxml.Domain{}
	require.NoError(t, domB.Unmarshal(liveB))
	require.Equal(t, vmMAC, domB.Devices.Interfaces[0].MAC.Address, "the VM keeps its MAC")
	require.Equal(t, rec.Tap, domB.Devices.Interfaces[0].Target.Dev)
	frames := announce.stop()
	require.Contains(t, frames, "RARP", "QEMU's self-announce from %s must be seen on pod B's %s", vmMAC, rec.Bridge)
	t.Logf("announce frames from the VM's MAC on pod B's bridge: %v", frames)

	// libvirt's migration port on pod B's loopback stays pod B's.
	served := serveOnce(t, b.pod.Pod, "127.0.0.1:49152", "libvirt's port")
	require.Equal(t, "libvirt's port", served())
}

// linkOrCopy makes dst a hard link of src, or a copy where that fails.
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Link(src, dst); err == nil {
		return
	}
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// waitConsole polls the console (every 50 ms, as console.waitFor) until
// one of whats is reported.
func waitConsole(ctx context.Context, c *console, whats ...string) (string, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.poll(); err != nil {
			return "", err
		}
		for _, w := range whats {
			if l, ok := c.report(w); ok {
				return l, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("guest did not report %v: %w", whats, ctx.Err())
		case <-tick.C:
		}
	}
}

var jobFieldRE = regexp.MustCompile(`(?m)^([A-Za-z ]+):\s+(.*)$`)

// jobField is one field of virsh domjobinfo's output ("" when absent).
func jobField(out, name string) string {
	for _, m := range jobFieldRE.FindAllStringSubmatch(out, -1) {
		if strings.TrimSpace(m[1]) == name {
			return strings.Join(strings.Fields(m[2]), " ")
		}
	}
	return ""
}

// probe sends a UDP datagram to each target every interval from the
// node and records when the guest's port unreachables come back, by the
// target probed ([guestAnswer]).
type probe struct {
	mu    sync.Mutex
	seen  map[string][]time.Time
	done  chan struct{}
	wg    sync.WaitGroup
	conns []io.Closer
}

func startProbe(t *testing.T, node *testutil.NS, ips []net.IP, port int, every time.Duration) *probe {
	t.Helper()
	p := &probe{seen: map[string][]time.Time{}, done: make(chan struct{})}
	// A raw ICMP socket with the kernel's receive time of each packet
	// (SO_TIMESTAMPNS): on a loaded machine the reader may run late.
	fd := -1
	var udp *net.UDPConn
	require.NoError(t, node.Do(func() (err error) {
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return err
		}
		udp, err = net.ListenUDP("udp4", nil)
		return err
	}))
	sport := udp.LocalAddr().(*net.UDPAddr).Port
	tv := unix.Timeval{Usec: 200000}
	require.NoError(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	p.conns = []io.Closer{udp}
	t.Cleanup(p.stop)
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		defer unix.Close(fd)
		buf, oob := make([]byte, 1500), make([]byte, 128)
		for {
			select {
			case <-p.done:
				return
			default:
			}
			n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil || n < 20 {
				continue
			}
			at, ok := kernelTime(oob[:oobn])
			if !ok {
				continue
			}
			target, ok := guestAnswer(buf[:n], ips, sport, port)
			if !ok {
				continue
			}
			p.mu.Lock()
			p.seen[target] = append(p.seen[target], at)
			p.mu.Unlock()
		}
	}()
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for _, ip := range ips {
				_, _ = udp.WriteToUDP([]byte(probePayload), &net.UDPAddr{IP: ip, Port: port})
			}
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// probePayload is what each probe datagram carries.
const probePayload = "probe"

// guestAnswer reports whether pkt (an IPv4 packet from a raw ICMP socket)
// is the guest's answer to one of the probe's datagrams, and to which
// target: an ICMP port unreachable (type 3, code 3: a host that received
// the datagram and has no listener) quoting the probe's own datagram (UDP
// from sport to one of ips at dport, carrying the probe's payload as far
// as quoted). A host unreachable (code 1), which the kernel of the pod the
// guest has not reached yet sends when the guest does not answer ARP, is
// not an answer: counting it measured gaps shorter than QEMU's own pause.
func guestAnswer(pkt []byte, ips []net.IP, sport, dport int) (string, bool) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return "", false
	}
	ihl := int(pkt[0]&0x0f) * 4
	icmp := pkt[ihl:]
	if ihl < 20 || len(pkt) < ihl+8+20+8 || icmp[0] != byte(ipv4.ICMPTypeDestinationUnreachable) || icmp[1] != 3 {
		return "", false
	}
	inner := icmp[8:]
	iihl := int(inner[0]&0x0f) * 4
	if inner[0]>>4 != 4 || iihl < 20 || inner[9] != unix.IPPROTO_UDP || len(inner) < iihl+8 {
		return "", false
	}
	udp := inner[iihl:]
	if int(binary.BigEndian.Uint16(udp[0:2])) != sport || int(binary.BigEndian.Uint16(udp[2:4])) != dport {
		return "", false
	}
	if quoted := udp[8:]; !strings.HasPrefix(probePayload, string(quoted[:min(len(quoted), len(probePayload))])) {
		return "", false
	}
	dst := net.IP(inner[16:20])
	for _, ip := range ips {
		if ip.Equal(dst) {
			return ip.String(), true
		}
	}
	return "", false
}

// kernelTime is the SCM_TIMESTAMPNS of a received packet's control
// messages.
func kernelTime(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return time.Unix(sec, nsec), true
		}
	}
	return time.Time{}, false
}

func (p *probe) answers(ip net.IP) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen[ip.String()])
}

func (p *probe) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	close(p.done)
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

// gap is the time from the last answer through a to the first through b
// after it.
func (p *probe) gap(a, b net.IP) (time.Duration, time.Time, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	as, bs := p.seen[a.String()], p.seen[b.String()]
	if len(as) == 0 || len(bs) == 0 {
		return 0, time.Time{}, time.Time{}
	}
	lastA := as[len(as)-1]
	i := slices.IndexFunc(bs, func(t time.Time) bool { return t.After(lastA) })
	if i < 0 {
		return 0, lastA, time.Time{}
	}
	return bs[i].Sub(lastA), lastA, bs[i]
}

// announceWatch records the RARP and ARP frames sent from one MAC on a
// link.
type announceWatch struct {
	fd     int
	mu     sync.Mutex
	frames []string
	wg     sync.WaitGroup
	stopFn func()
}

func watchAnnounce(t *testing.T, ns *testutil.NS, link, mac string) *announceWatch {
	t.Helper()
	hw, err := net.ParseMAC(mac)
	require.NoError(t, err)
	w := &announceWatch{fd: -1}
	require.NoError(t, ns.Do(func() error {
		l, err := net.InterfaceByName(link)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: l.Index}); err != nil {
			_ = unix.Close(fd)
			return err
		}
		w.fd = fd
		return nil
	}))
	// A receive timeout lets the reader notice stop.
	tv := unix.Timeval{Usec: 200000}
	require.NoError(t, unix.SetsockoptTimeval(w.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	done := make(chan struct{})
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		buf := make([]byte, 2048)
		for {
			select {
			case <-done:
				return
			default:
			}
			n, _, err := unix.Recvfrom(w.fd, buf, 0)
			if err != nil || n < 14 {
				continue
			}
			if !slices.Equal(buf[6:12], []byte(hw)) {
				continue
			}
			switch et := binary.BigEndian.Uint16(buf[12:14]); et {
			case 0x8035, 0x0806:
				kind := map[uint16]string{0x8035: "RARP", 0x0806: "ARP"}[et]
				w.mu.Lock()
				w.frames = append(w.frames, kind)
				w.mu.Unlock()
			}
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(done)
			w.wg.Wait()
			_ = unix.Close(w.fd)
		}
	}
	w.stopFn = stop
	t.Cleanup(stop)
	return w
}

func (w *announceWatch) stop() []string {
	w.stopFn()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.frames)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// serveOnce listens on addr in ns, answers one connection with reply,
// and returns a function that dials addr from ns and returns what came
// back.
func serveOnce(t *testing.T, ns *testutil.NS, addr, reply string) func() string {
	t.Helper()
	var ln net.Listener
	require.NoError(t, ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }))
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.WriteString(c, reply)
		_ = c.Close()
	}()
	return func() string {
		var got []byte
		require.NoError(t, ns.Do(func() error {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			got, err = io.ReadAll(c)
			return err
		}))
		return string(got)
	}
}

// virshUpdater is migration.DeviceUpdater on a test daemon's domain.
type virshUpdater struct {
	d    *libvirtd.Daemon
	name string
}

func (u virshUpdater) UpdateDevice(ctx context.Context, deviceXML string) error {
	return u.d.Device(ctx, "update-device", u.name, deviceXML)
}

// migrationBridgeVMI: the bridge binding on a secondary network alone (no
// pod network: it migrates without the annotation, as in KubeVirt), %s
// for more metadata.
const migrationBridgeVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: migrating-bridge
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000b0024%s
spec:
  domain:
    resources:
      requests:
        memory: 128Mi
    devices:
      interfaces:
      - {name: blue, bridge: {}}
  networks:
  - {name: blue, multus: {networkName: blue}}
`

// sessionCapsCacheInVM is libvirtd.DefaultCapsCache as the kernel VM
// sees it.
func sessionCapsCacheInVM() string {
	if os.Getenv(kernelvm.EnvInVM) == "1" {
		return libvirtd.DefaultCapsCache()
	}
	return libvirtd.DefaultCapsCache() + "-kernelvm"
}

// TestLiveMigrationBridge migrates a guest whose one interface is the
// bridge binding on a secondary network (CNI bridge plugin with
// host-local IPAM, attached as Multus does) from pod A, where KubeVirt
// v0.53's ordinal names hold (net1, tap1), to pod B, where KubeVirt 1.x's
// hashed ones do (pod16477688c0e, tap16477688c0e): migration.TargetDomain
// rewrites the tap. The guest keeps its MAC; the link refresh runs on the
// migrated domain; a fresh DHCP exchange from the guest on pod B (what a
// rebooted guest does: a DISCOVER from its MAC) gets pod B's address from
// pod B's server (KubeVirt's bug #16696 was no answer there). The binding needs a dummy link: on a kernel
// without one the test runs in the kernel VM, QEMU nested under TCG.
func TestLiveMigrationBridge(t *testing.T) {
	if raceDetector {
		t.Skip("-race: the nested guest under TCG is too slow with the race detector (run without -race)")
	}
	if testing.Short() {
		t.Skip("-short: boots a nested guest under TCG and migrates it")
	}
	t.Parallel() // beside the other kernel VMs: each runs on one host core
	var setEnv map[string]string
	if os.Getenv(kernelvm.EnvInVM) != "1" {
		setEnv = map[string]string{testutil.CNIPluginDirEnv: testutil.CNIPluginDir(t)}
	}
	if kernelvm.DelegateWith(t, kernelvm.Options{
		Needs:     []string{"dummy", "bridge", "veth", "tun"},
		HostRoot:  true,
		MemoryMiB: 2048,
		Timeout:   12 * time.Minute,
		CacheDir:  sessionCapsCacheInVM(),
		Env:       []string{"VIRTNET_KERNELVM_DIR"},
		SetEnv:    setEnv,
	}) {
		return
	}
	began := time.Now()
	assets := requireGuest(t)
	ctx, cancel := context.WithTimeout(context.Background(), guestTimeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))

	node := testutil.NewNS(t, "vn-node")
	primary := testutil.NewCNINetwork(t, node, testutil.FlannelSpec)
	secondary := testutil.NewCNINetwork(t, node, testutil.SecondarySpec)
	a := &launcher{pod: primary.AddPod(t)}
	attA := secondary.AttachSecondary(t, a.pod, "net1")
	b := &launcher{pod: primary.AddPod(t)}
	hashed := api.HashedPodInterface("blue")
	attB := secondary.AttachSecondary(t, b.pod, hashed)
	require.NotEqual(t, attA.IPs[0].IP.String(), attB.IPs[0].IP.String())
	a.d = libvirtd.Start(t, libvirtd.Options{NetNS: a.pod.Pod.Path, HostUUID: "5b7e1c1e-e2e0-4a1b-9c55-0000000ba024", CapsCache: libvirtd.DefaultCapsCache()})
	b.d = libvirtd.Start(t, libvirtd.Options{NetNS: b.pod.Pod.Path, HostUUID: "5b7e1c1e-e2e0-4a1b-9c55-0000000bb024", CapsCache: libvirtd.DefaultCapsCache()})

	vmi, err := api.Load([]byte(fmt.Sprintf(migrationBridgeVMI, "")))
	require.NoError(t, err)
	a.prepare(t, ctx, vmi, false, log)
	// No ping and no connection to the node (each costs seconds nested):
	// the guest goes from its lease to its servers.
	name, c := a.boot(t, ctx, assets, guestScript{})
	line := waitLine(t, ctx, c, "lease", "lease-failed")
	require.True(t, strings.HasPrefix(line, "lease ip="+attA.IPs[0].IP.String()+" "), "pod A's address: %s", line)
	// The guest migrates while its script runs on (ping, servers).

	live, err := a.d.Virsh(ctx, "dumpxml", "--migratable", name)
	require.NoError(t, err)
	srcDom := &libvirtxml.Domain{}
	require.NoError(t, srcDom.Unmarshal(live))
	require.Len(t, srcDom.Devices.Interfaces, 1)
	require.Equal(t, "tap1", srcDom.Devices.Interfaces[0].Target.Dev)
	vmMAC := srcDom.Devices.Interfaces[0].MAC.Address
	require.NotEqual(t, attB.MAC.String(), vmMAC)

	target, err := api.Load([]byte(fmt.Sprintf(migrationBridgeVMI, "\n  annotations: {"+api.PodInterfaceNamesAnnotation+": hashed}")))
	require.NoError(t, err)
	target.Status.Interfaces = []api.InterfaceStatus{{Name: "blue", MAC: vmMAC, InfoSource: "domain"}}
	phase1Target := b.prepare(t, ctx, target, true, log)
	// The guest's console in pod B, logged on any failure from here on.
	cB := &console{path: b.console}
	t.Cleanup(func() {
		if t.Failed() {
			_ = cB.poll()
			t.Logf("guest console after the migration (%s):\n%s", b.console, strings.Join(cB.lines, "\n"))
		}
	})
	destFile, dest := b.targetXML(t, target, srcDom)
	require.Equal(t, []string{"blue"}, dest.Refresh)
	require.Equal(t, "tap"+hashed[3:], dest.Domain.Devices.Interfaces[0].Target.Dev, "the target pod's tap")

	t0 := time.Now()
	out, err := a.d.Virsh(ctx, "migrate", "--live", name, b.d.URI,
		"--migrateuri", "unix://"+b.d.Path("migration.sock"), "--xml", destFile)
	require.NoError(t, err, "%s\n%s\n%s", out, a.d.Log(), b.d.Log())
	t.Logf("FIGURE bridge migration (nested TCG): virsh migrate %v; phase1 in the target pod %v",
		time.Since(t0).Round(time.Millisecond), phase1Target.Round(time.Millisecond))
	// The source launcher exits after the switch-over, its DHCP server
	// with it: pod A's bridge still hangs on the secondary network, and
	// its server would answer the VM's MAC too (with pod A's address).
	require.NoError(t, a.running.Stop(), "pod A's DHCP server stops cleanly after the switch-over")
	liveB, err := b.d.Virsh(ctx, "dumpxml", name)
	require.NoError(t, err, "the domain on pod B's daemon\n%s", b.d.Log())
	domB := &libvirtxml.Domain{}
	require.NoError(t, domB.Unmarshal(liveB))
	require.Equal(t, vmMAC, domB.Devices.Interfaces[0].MAC.Address, "the VM keeps its MAC")
	require.NoError(t, migration.RefreshLinks(ctx, virshUpdater{b.d, name}, domB, dest.Refresh),
		"the link refresh on pod B's daemon\n%s", b.d.Log())
	liveB, err = b.d.Virsh(ctx, "dumpxml", name)
	require.NoError(t, err, "the domain on pod B's daemon\n%s", b.d.Log())
	require.Contains(t, liveB, "<link state='up'/>", "the link is up again after the refresh")

	// A fresh DHCP exchange from the guest on pod B, what a rebooted
	// guest does (a DISCOVER from its MAC): pod B's server answers it
	// with pod B's address. The node reaches the guest at its old address
	// through pod B once QEMU's announce moved its MAC to pod B's port.
	// The guest's servers listen once its script got there, before the
	// migration (pod A's console) or after it (pod B's).
	// The source QEMU has exited: pod A's console is whole. A line the
	// switch-over cut goes on in pod B's console.
	require.NoError(t, c.poll())
	cB.part = c.part
	if _, ok := c.report("listening"); !ok {
		waitLine(t, ctx, cB, "listening")
	}
	g := &guest{t: t, ctx: ctx}
	renewal := g.dial(node, attA.IPs[0].IP, 8081)
	require.True(t, strings.HasPrefix(renewal, "renew ip="+attB.IPs[0].IP.String()+" "), "pod B's address from pod B's server: %q", renewal)
	t.Logf("bridge migration: wall time %s", time.Since(began).Round(time.Second))
}

// waitLine waits for the guest's first report of one of whats.
func waitLine(t *testing.T, ctx context.Context, c *console, whats ...string) string {
	t.Helper()
	line, err := waitConsole(ctx, c, whats...)
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	return line
}

// recText is a record value as the record's JSON writes it ("" when unset).
func recText(v encoding.TextMarshaler) string {
	b, err := v.MarshalText()
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestGuestAnswer: only the port unreachable that quotes the probe's own
// datagram counts as the guest's answer; a host unreachable from the
// pod's kernel, another datagram's error or another kind of ICMP do not.
func TestGuestAnswer(t *testing.T) {
	a, b := net.IPv4(10, 244, 1, 7), net.IPv4(10, 244, 2, 7)
	ips := []net.IP{a, b}
	// icmpErr builds an ICMP destination unreachable of code from src,
	// quoting a UDP datagram from sport to dst:dport with payload.
	icmpErr := func(code byte, src, dst net.IP, sport, dport int, payload string) []byte {
		inner := make([]byte, 20+8+len(payload))
		inner[0], inner[8], inner[9] = 0x45, 63, unix.IPPROTO_UDP
		copy(inner[12:16], net.IPv4(10, 244, 0, 1).To4())
		copy(inner[16:20], dst.To4())
		binary.BigEndian.PutUint16(inner[20:22], uint16(sport))
		binary.BigEndian.PutUint16(inner[22:24], uint16(dport))
		copy(inner[28:], payload)
		pkt := make([]byte, 20+8, 20+8+len(inner))
		pkt[0], pkt[9] = 0x45, unix.IPPROTO_ICMP
		copy(pkt[12:16], src.To4())
		pkt[20], pkt[21] = byte(ipv4.ICMPTypeDestinationUnreachable), code
		return append(pkt, inner...)
	}
	for _, c := range []struct {
		name   string
		pkt    []byte
		target string
	}{
		{"guest's port unreachable via pod A", icmpErr(3, a, a, 40000, 9999, "probe"), a.String()},
		{"guest's port unreachable via pod B", icmpErr(3, b, b, 40000, 9999, "probe"), b.String()},
		{"quoting part of the payload", icmpErr(3, b, b, 40000, 9999, "pro"), b.String()},
		{"host unreachable from pod B's kernel", icmpErr(1, b, b, 40000, 9999, "probe"), ""},
		{"another socket's datagram", icmpErr(3, b, b, 40001, 9999, "probe"), ""},
		{"another port", icmpErr(3, b, b, 40000, 53, "probe"), ""},
		{"another payload", icmpErr(3, b, b, 40000, 9999, "hello"), ""},
		{"an address not probed", icmpErr(3, b, net.IPv4(10, 244, 3, 7), 40000, 9999, "probe"), ""},
		{"truncated", icmpErr(3, b, b, 40000, 9999, "probe")[:40], ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, ok := guestAnswer(c.pkt, ips, 40000, 9999)
			require.Equal(t, c.target != "", ok)
			require.Equal(t, c.target, target)
		})
	}
}
