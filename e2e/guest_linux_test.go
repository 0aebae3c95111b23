package e2e

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// guestVMI is the VMI under test: one masquerade interface exposing TCP
// 8080, a container disk (its overlay is made by the hook, the test VM
// does not boot from it) and a NoCloud volume.
const guestVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: e2e-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-000000000007
spec:
  domain:
    resources:
      requests:
        memory: 192Mi
    devices:
      disks:
      - name: containerdisk
        disk: {bus: virtio}
      - name: cloudinitdisk
        disk: {bus: virtio}
      interfaces:
      - name: default
        masquerade: {}
        ports:
        - {name: http, protocol: TCP, port: 8080}
  networks:
  - name: default
    pod: {}
  volumes:
  - name: containerdisk
    containerDisk: {image: quay.io/kubevirt/cirros-container-disk-demo}
  - name: cloudinitdisk
    cloudInitNoCloud:
      userData: |
        #!/bin/sh
        echo user-data-ran-on-$(hostname)
`

// guestModules are the guest kernel modules, in load order.
var guestModules = []string{
	"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"failover", "net_failover", "virtio_net", "virtio_blk", "cdrom", "isofs",
}

// Bootline: under TCG every instruction the guest kernel runs before its
// init costs, and nested in the kernel VM it costs some 30 to 80 times
// more (the guest's boot is most of a nested guest test), so the kernel
// skips what the busybox guest has no use for: crypto self-tests, the
// read-only remapping of its image and the W+X scan that follows
// (rodata=off), the security modules and audit, the zeroing of every
// page and slab object it allocates (init_on_alloc, on in Debian's
// build: a hardening a test guest has no use for, and a memset of each
// page under nested TCG), the rewriting of every lock prefix of the
// kernel and of each module for a single CPU (noreplace-smp: a locked
// instruction is as correct on one CPU), and initcalls that only register tracers, run
// self-tests, measure or verify signatures (IMA, EVM, the built-in
// certificates; a module whose signature cannot be checked still loads
// on a kernel that does not enforce them, as Debian's does not) or probe
// devices the guest does not use (the PS/2 controller, the CMOS RTC
// driver, VGA arbitration, zswap, the disk LED trigger). quiet: nothing on the
// emulated serial console before init. ACPI stays on: without it the
// kernel finds no device behind q35's PCIe root ports (the NIC); see
// docs/testing.md for the figures per variant.
const guestCmdline = "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init cryptomgr.notests mitigations=off" +
	" rodata=off lsm= audit=0 init_on_alloc=0 noreplace-smp initcall_blacklist=init_kprobe_trace,crypto_kdf108_init,init_blk_tracer," +
	"init_ima,init_evm,load_system_certificate_list,digsig_init,init_encrypted,trace_eval_init,init_trace_printk_function_export," +
	"i8042_init,cmos_init,vga_arb_device_init,init_zswap,ledtrig_disk_init"

// guestKernel is the kernel libvirt boots directly: the uncompressed ELF
// vmlinux when the assets have it (QEMU enters it through its PVH entry
// point, skipping the bzImage's self-decompression, which costs seconds
// under TCG and tens of seconds under nested TCG), else vmlinuz.
func guestKernel(assets string) string {
	if st, err := os.Stat(filepath.Join(assets, "vmlinux")); err == nil && st.Mode().IsRegular() {
		return filepath.Join(assets, "vmlinux")
	}
	return filepath.Join(assets, "vmlinuz")
}

// assetDir is scripts/kernelvm-assets.sh's directory.
func assetDir() string {
	if d := os.Getenv("VIRTNET_KERNELVM_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "virtnet", "kernelvm")
}

// requireGuest skips under -short (a guest boot is not a unit test), and
// (testutil.Skip) unless everything the test runs is here; it returns the
// asset directory.
func requireGuest(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: boots a guest under TCG")
	}
	testutil.RequireRoot(t)
	for _, p := range []struct{ prog, pkg string }{
		{"qemu-system-x86_64", "qemu-system-x86"},
		{"virt-qemu-run", "libvirt-daemon-driver-qemu"},
		{"qemu-img", "qemu-utils"},
	} {
		if _, err := exec.LookPath(p.prog); err != nil {
			testutil.Skip(t, p.prog+" in PATH (Debian package "+p.pkg+")")
		}
	}
	if _, err := user.Lookup("libvirt-qemu"); err != nil {
		testutil.Skip(t, "system user libvirt-qemu, which virt-qemu-run's QEMU driver needs (useradd --system libvirt-qemu)")
	}
	dir := assetDir()
	need := []string{"vmlinuz", "busybox"}
	for _, m := range guestModules {
		need = append(need, filepath.Join("modules", m+".ko"))
	}
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			testutil.Skip(t, "kernel VM asset "+filepath.Join(dir, f)+
				" (run scripts/kernelvm-assets.sh; with VIRTNET_KERNELVM_FORCE=1 if the directory predates virtio_blk/isofs)")
		}
	}
	return dir
}

// TestGuestEndToEnd boots a real guest through the whole library: phase1
// in a pod namespace, the domain with an ethernet interface on phase1's
// tap, the preStartHook (overlay, DHCP server inside the pod namespace,
// NoCloud image), then virt-qemu-run in the pod namespace. The guest must
// get its lease from our DHCP server, its hostname from the NoCloud image,
// ping the gateway, reach a server in the node namespace with the pod IP
// as source, and be reachable from the node on the declared port.
func TestGuestEndToEnd(t *testing.T) {
	pod := testutil.NewPod(t)
	g := bootGuest(t, guestCase{vmi: guestVMI, pod: pod, ping: "10.0.2.1", nocloud: true})
	l := g.lease()
	require.Equal(t, "10.0.2.2", l["ip"])
	require.Equal(t, "24", l["mask"])
	require.Equal(t, "10.0.2.1", l["router"])
	require.Equal(t, "10.96.0.10", l["dns"])
	require.Equal(t, "e2e-guest", l["hostname"])
	require.Equal(t, "1440", l["mtu"])

	line := g.wait("hostname", "hostname-failed")
	require.Regexp(t, `^hostname e2e-guest from /dev/vd`, line)
	require.Contains(t, g.wait("userdata"), "user-data-ran-on-e2e-guest")
	require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
	g.requireSource(pod.PodIP)
	g.wait("listening")
	require.Equal(t, "hello from e2e-guest ip=10.0.2.2/24", g.dial(pod.Node, pod.PodIP, 8080))
	g.done()
}

// guestCase is one guest test: a VMI on a pod, and what the guest does.
type guestCase struct {
	vmi string // the manifest; its first interface is the one under test
	pod *testutil.Pod
	// ping is the address the guest pings after its lease.
	ping string
	// peer, when set, is a second pod the guest connects to.
	peer *testutil.Pod
	// nocloud: the guest reads its hostname from the NoCloud image.
	nocloud bool
	// ipv6: the guest waits for its IPv6 default route (router
	// advertisements) and reports it as "routes6".
	ipv6 bool
	// dhcp6: the guest leases the pod's IPv6 by DHCPv6 (guesttool, see
	// guestTool), waits for its default route, pings the node's
	// IPv6 address and connects to it and to the peer over IPv6 (see
	// guestScript.dhcp6); v6only skips DHCPv4 (an IPv6-only pod).
	dhcp6, v6only bool
	// passt: the interface is passt's; the test starts passt and gives
	// QEMU its socket (see usePasst); the guest serves ports 22 and 8080
	// to clients that speak first, and takes passtBulk bytes from the
	// node's server ("bulk-in"); see guestScript.passt.
	passt bool
	// mtuProbe: the guest runs `ping -M do -s 1372` and `-s 1373` to
	// ping and reports them ("pingdo-1372", "pingdo-1373"), and counts
	// the bytes of one connection on port 9000 ("bulk").
	mtuProbe bool
}

// guest is a booted guest and what the test needs to talk to it.
type guest struct {
	t        *testing.T
	ctx      context.Context
	gc       guestCase
	vmi      *api.VMI
	store    *cache.Store
	log      *slog.Logger
	v        *virtQemuRun
	c        *console
	nodeSeen <-chan string
	peerSeen <-chan string
	// node6Seen and peer6Seen: the same for the IPv6 servers (dhcp6).
	node6Seen <-chan string
	peer6Seen <-chan string
	start     time.Time
	// dom is the domain the hook built (before the changes for TCG).
	dom *libvirtxml.Domain
}

// bootGuest runs the whole path for gc: a server in the node namespace
// (and in the peer pod), phase1 as virt-handler runs it, the domain, the
// preStartHook (DHCP server in the pod namespace), the busybox guest's
// initramfs, then virt-qemu-run in the pod namespace; it returns once
// the guest reported its lease. A failed test logs the guest's console.
func bootGuest(t *testing.T, gc guestCase) *guest {
	t.Helper()
	assets := requireGuest(t)
	ctx, cancel := context.WithTimeout(context.Background(), guestTimeout)
	t.Cleanup(cancel)
	g := &guest{t: t, ctx: ctx, gc: gc, log: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))}

	// Short paths: libvirt puts unix sockets under the root. A relayed
	// guest's files are in the directory the host shares (relayGuest).
	relayDir := ""
	if os.Getenv(kernelvm.EnvInVM) == "1" {
		relayDir = os.Getenv(relayEnv)
	}
	work, err := os.MkdirTemp(relayDir, "vn-e2e-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	dirs := domxml.Options{
		PrivateDir:       filepath.Join(work, "private"),
		EphemeralDir:     filepath.Join(work, "ephemeral"),
		ContainerDiskDir: filepath.Join(work, "container-disks"),
		EmptyDiskDir:     filepath.Join(work, "empty-disks"),
	}
	require.NoError(t, os.MkdirAll(dirs.ContainerDiskDir, 0o755))
	// The container disk's image (volume index 0): an empty raw disk.
	require.NoError(t, os.WriteFile(filepath.Join(dirs.ContainerDiskDir, "disk_0.img"), make([]byte, 1<<20), 0o644))
	resolv := filepath.Join(work, "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte(podResolvConf), 0o644))

	g.vmi, err = api.Load([]byte(gc.vmi))
	require.NoError(t, err)
	var nodeAddr, peerAddr string
	if !gc.v6only {
		nodeAddr, g.nodeSeen = serveSource(t, gc.pod.Node, gc.pod.NodeIP)
	}
	if gc.peer != nil && gc.peer.PodIP != nil {
		peerAddr, g.peerSeen = serveSource(t, gc.peer.Pod, gc.peer.PodIP)
	}
	var bulkAddr string
	if gc.passt && !gc.v6only {
		bulkAddr = serveBytes(t, gc.pod.Node, gc.pod.NodeIP, passtBulk)
	}
	var node6Addr, peer6Addr string
	var tool []byte
	if gc.dhcp6 {
		node6Addr, g.node6Seen = serveSource(t, gc.pod.Node, gc.pod.NodeIPv6)
		if gc.peer != nil {
			peer6Addr, g.peer6Seen = serveSource(t, gc.peer.Pod, gc.peer.PodIPv6)
		}
	}
	if gc.dhcp6 || gc.mtuProbe {
		tool, err = os.ReadFile(guestTool(t))
		require.NoError(t, err)
	}

	// phase1, as virt-handler would run it.
	g.store, err = cache.New(filepath.Join(work, "cache"))
	require.NoError(t, err)
	t0 := time.Now()
	require.NoError(t, phase1.Run(ctx, g.vmi, gc.pod.Pod.Path, g.store, phase1.Options{Logger: g.log}))
	rec := &cache.Interface{}
	if !gc.passt {
		rec, err = g.store.ReadInterface(g.vmi.Metadata.UID, g.vmi.Spec.Domain.Devices.Interfaces[0].Name)
		require.NoError(t, err)
	}
	t.Logf("phase1 (%s): bridge %s tap %s mac %s ipv4 %s gateway %s mtu %d routes %v ipv6 %s gateway6 %s router6 %s onlink6 %s", time.Since(t0).Round(time.Millisecond),
		rec.Bridge, rec.Tap, rec.MAC, rec.IPv4, rec.Gateway, rec.MTU, rec.Routes, rec.IPv6, rec.GatewayIPv6, rec.RouterIPv6, rec.OnLinkIPv6)

	// The hook: it builds the domain, adds the ethernet interface, makes
	// the overlay and the NoCloud image, and starts the DHCP server in the
	// pod namespace.
	hook := &prestart.Hook{
		VMI: g.vmi, Store: g.store, Dirs: dirs,
		ResolvConf:    resolv,
		InterfaceType: "ethernet",
		NetNS:         gc.pod.Pod.Path,
		Logger:        g.log,
	}
	running, err := hook.Run(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, running.Stop()) })
	dom := running.Domain()
	g.dom = dom
	require.Len(t, dom.Devices.Interfaces, 1)
	if gc.passt {
		require.Empty(t, running.Servers(), "passt serves DHCP itself")
		usePasst(t, dom, gc.pod, work)
	} else {
		require.Len(t, running.Servers(), 1)
		nic := dom.Devices.Interfaces[0]
		require.NotNil(t, nic.Target)
		require.Equal(t, rec.Tap, nic.Target.Dev)
		require.Equal(t, "no", nic.Target.Managed)
	}

	// What the test VM cannot use: TCG, direct kernel boot, console to a
	// file, no container disk (nothing to boot from it), no VNC.
	consoleLog := filepath.Join(work, "console.log")
	initrd := filepath.Join(work, "initramfs.cpio")
	var mods []string
	for _, m := range guestModules {
		mods = append(mods, filepath.Join(assets, "modules", m+".ko"))
	}
	require.NoError(t, writeInitramfs(initrd, guestFiles{
		busybox: filepath.Join(assets, "busybox"),
		modules: mods,
		files: guestFilesFor(guestScript{modules: mods, ping: gc.ping, node: nodeAddr, peer: peerAddr, nocloud: gc.nocloud, ipv6: gc.ipv6,
			dhcp6: gc.dhcp6, node6: node6Addr, peer6: peer6Addr, v6only: gc.v6only, mtuProbe: gc.mtuProbe, passt: gc.passt, bulk: bulkAddr}, tool),
	}))
	forTCG(dom, guestKernel(assets), initrd, consoleLog)
	xml, err := dom.Marshal()
	require.NoError(t, err)
	domainXML := filepath.Join(work, "domain.xml")
	require.NoError(t, os.WriteFile(domainXML, []byte(xml), 0o644))

	g.start = time.Now()
	if relayDir != "" {
		relayGuest(t, ctx, gc.pod.Pod, dom.Devices.Interfaces[0].Target.Dev, domainXML, relayDir)
	} else {
		g.v = startVirtQemuRun(t, filepath.Join(work, "libvirt"), domainXML, gc.pod.Pod.Path)
	}
	g.c = &console{path: consoleLog}
	t.Cleanup(func() {
		if t.Failed() {
			_ = g.c.poll()
			t.Logf("guest console:\n%s", strings.Join(g.c.lines, "\n"))
		}
	})

	line := g.wait("init")
	seenInit := time.Since(g.start)
	// The guest's uptime at init dates its kernel's start: what came
	// before is libvirt (probing QEMU's capabilities unless its cache was
	// seeded), QEMU's start and the firmware.
	t.Logf("guest init seen %s after virt-qemu-run started: %q; guest kernel started about %s after virt-qemu-run",
		seenInit.Round(100*time.Millisecond), line, (seenInit - uptime(t, line)).Round(100*time.Millisecond))
	g.v.saveCaps(t)
	if gc.v6only {
		line = g.wait("lease6", "lease6-failed")
		require.True(t, strings.HasPrefix(line, "lease6 "), "guest: %s", line)
		t.Logf("guest DHCPv6 lease seen %s after virt-qemu-run started", time.Since(g.start).Round(100*time.Millisecond))
		return g
	}
	line = g.wait("lease", "lease-failed")
	if mods, ok := g.c.report("modules"); ok {
		t.Logf("DHCP lease %s after the guest's modules were loaded (udhcpc start → bound, guest clock)",
			(uptime(t, line) - uptime(t, mods)).Round(10*time.Millisecond))
	}
	require.True(t, strings.HasPrefix(line, "lease "), "guest: %s", line)
	t.Logf("guest lease seen %s after virt-qemu-run started", time.Since(g.start).Round(100*time.Millisecond))
	return g
}

// guestTimeout bounds one guest test; the nested guest of the kernel VM
// is the slow one.
const guestTimeout = 8 * time.Minute

// podResolvConf is the pod's resolv.conf, which the DHCP server serves.
const podResolvConf = "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"

// wait returns the guest's first report of one of whats, failing the test
// when it does not come.
func (g *guest) wait(whats ...string) string {
	g.t.Helper()
	line, err := g.c.waitFor(g.ctx, g.v, whats...)
	require.NoError(g.t, err)
	g.t.Logf("guest: %s", line)
	return line
}

var leaseKeyRE = regexp.MustCompile(`\b([a-z]+)=`)

// lease parses the guest's lease report into its key=value fields
// (values may hold spaces: the search list).
func (g *guest) lease() map[string]string {
	g.t.Helper()
	line, ok := g.c.report("lease")
	require.True(g.t, ok, "no lease report")
	return parseKV(strings.TrimPrefix(line, "lease "))
}

func parseKV(s string) map[string]string {
	out := map[string]string{}
	idx := leaseKeyRE.FindAllStringSubmatchIndex(s, -1)
	for i, m := range idx {
		end := len(s)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[s[m[2]:m[3]]] = strings.TrimSpace(s[m[1]:end])
	}
	return out
}

// requireSource waits for the guest's connection to the node's server and
// checks the source address both sides saw.
func (g *guest) requireSource(want net.IP) {
	g.t.Helper()
	line := g.wait("source")
	require.Equal(g.t, "source "+want.String(), strings.Join(strings.Fields(line)[:2], " "))
	select {
	case host := <-g.nodeSeen:
		require.Equal(g.t, want.String(), host, "the node's server must see the pod IP as the guest's source")
	case <-g.ctx.Done():
		g.t.Fatal("the node's server saw no connection")
	}
}

// requirePeer is requireSource for the second pod's server.
func (g *guest) requirePeer(want net.IP) {
	g.t.Helper()
	line := g.wait("peer")
	require.Equal(g.t, "peer "+want.String(), strings.Join(strings.Fields(line)[:2], " "))
	select {
	case host := <-g.peerSeen:
		require.Equal(g.t, want.String(), host)
	case <-g.ctx.Done():
		g.t.Fatal("the second pod's server saw no connection")
	}
}

// dial connects from ns to ip:port (retrying for up to 60 s) and returns
// what the guest answered.
func (g *guest) dial(ns *testutil.NS, ip net.IP, port int) string {
	g.t.Helper()
	return g.request(ns, ip, port, "")
}

// request is dial that sends req and a newline first, unless req is
// empty, as a client that speaks first (HTTP, SSH) does.
func (g *guest) request(ns *testutil.NS, ip net.IP, port int, req string) string {
	g.t.Helper()
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	var reply string
	var last error
	// The first attempt at once (the guest said it listens), then every
	// 250 ms for up to 60 s; require.Eventually would wait a tick first.
	try := func() bool {
		var got []byte
		last = ns.Do(func() error {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			if req != "" {
				if _, err := io.WriteString(conn, req+"\n"); err != nil {
					return err
				}
			}
			got, err = io.ReadAll(conn)
			return err
		})
		reply = strings.TrimSpace(string(got))
		return last == nil && reply != ""
	}
	for deadline := time.Now().Add(60 * time.Second); !try(); {
		if time.Now().After(deadline) {
			g.t.Fatalf("%s must reach the guest at %s (last error %v)", ns.Name, addr, last)
		}
		select {
		case <-g.ctx.Done():
			g.t.Fatalf("%s must reach the guest at %s: %v (last error %v)", ns.Name, addr, g.ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
	g.t.Logf("%s → %s answered %q", ns.Name, addr, reply)
	return reply
}

// done logs the test's wall time since virt-qemu-run started.
func (g *guest) done() {
	g.t.Logf("whole run (virt-qemu-run start → last check): %s", time.Since(g.start).Round(time.Second))
}

// serveSource listens on ip:0 in ns and answers each connection with the
// source address it saw, which it also sends on the returned channel.
func serveSource(t *testing.T, ns *testutil.NS, ip net.IP) (string, <-chan string) {
	t.Helper()
	require.NotNil(t, ip, "no address to serve on in %s", ns.Name)
	seen := make(chan string, 8)
	var ln net.Listener
	require.NoError(t, ns.Do(func() (err error) { ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "0")); return err }))
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			_, _ = io.WriteString(c, host+"\n")
			_ = c.Close()
			select {
			case seen <- host:
			default:
			}
		}
	}()
	return ln.Addr().String(), seen
}

// serveBytes listens on ip:0 in ns and sends n bytes on each connection,
// then closes it.
func serveBytes(t *testing.T, ns *testutil.NS, ip net.IP, n int) string {
	t.Helper()
	var ln net.Listener
	require.NoError(t, ns.Do(func() (err error) { ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), "0")); return err }))
	t.Cleanup(func() { _ = ln.Close() })
	block := bytes.Repeat([]byte("virtnet-"), n/8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			_, _ = c.Write(block)
			_ = c.Close()
		}
	}()
	return ln.Addr().String()
}

// uptime is the guest uptime "t=<seconds>" of a report.
func uptime(t *testing.T, report string) time.Duration {
	t.Helper()
	i := strings.LastIndex(report, "t=")
	require.GreaterOrEqual(t, i, 0, "no t= in %q", report)
	d, err := time.ParseDuration(strings.TrimSpace(report[i+2:]) + "s")
	require.NoError(t, err)
	return d
}

// forTCG adapts the domain to this test's machine: plain QEMU (no KVM), a
// CPU model TCG has, direct boot of kernel and initrd with qboot as the
// firmware where there is one (kernelvm.Firmware: SeaBIOS's device scan
// costs a nested guest some 7 s more than qboot), the serial console into a
// file, and none of the devices the busybox guest has no use for (the
// container disk, graphics, the guest agent channel).
func forTCG(dom *libvirtxml.Domain, kernel, initrd, consoleLog string) {
	dom.Type = "qemu"
	dom.CPU = &libvirtxml.DomainCPU{Mode: "custom", Match: "exact", Model: &libvirtxml.DomainCPUModel{Value: "qemu64", Fallback: "allow"}}
	dom.OS.Kernel, dom.OS.Initrd, dom.OS.Cmdline = kernel, initrd, guestCmdline
	if fw := kernelvm.Firmware(); fw != "" {
		dom.OS.Loader = &libvirtxml.DomainLoader{Path: fw, Type: "rom"}
	}
	dom.OnReboot, dom.OnPoweroff, dom.OnCrash = "destroy", "destroy", "destroy"
	d := dom.Devices
	var disks []libvirtxml.DomainDisk
	for _, disk := range d.Disks {
		if disk.Alias != nil && disk.Alias.Name == domxml.UserAliasPrefix+"containerdisk" {
			continue
		}
		disks = append(disks, disk)
	}
	d.Disks = disks
	port := uint(0)
	d.Serials = []libvirtxml.DomainSerial{{
		Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: consoleLog}},
		Target: &libvirtxml.DomainSerialTarget{Type: "isa-serial", Port: &port},
	}}
	d.Consoles = []libvirtxml.DomainConsole{{
		Source: &libvirtxml.DomainChardevSource{File: &libvirtxml.DomainChardevSourceFile{Path: consoleLog}},
		Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &port},
	}}
	d.Graphics, d.Videos, d.Channels = nil, nil, nil
	d.MemBalloon = &libvirtxml.DomainMemBalloon{Model: "none"}
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
