package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/netdriver/intercept"
	"github.com/virtnet/virtnet/netdriver/kernel"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/phase2/prestart"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
	"github.com/virtnet/virtnet/testrig/testutil/libvirtd"
)

// hotplugGuestVMI is the hot-plug guest's VMI (KubeVirt 1.x's hashed pod
// interface names): masquerade on the pod network, and, when blue is not
// "", the bridge interface blue on a Multus network, its entry ending
// with blue ("-" for nothing, ", state: down", ", state: absent").
func hotplugGuestVMI(blue string) string {
	y := `
kind: VirtualMachineInstance
metadata:
  name: hotplug-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-000000000023
  annotations: {virtnet.io/pod-interface-names: hashed}
spec:
  domain:
    resources: {requests: {memory: 192Mi}}
    devices:
      interfaces:
      - {name: default, masquerade: {}}
`
	nets := "  networks:\n  - {name: default, pod: {}}\n"
	if blue != "" {
		y += "      - {name: blue, bridge: {}" + strings.TrimPrefix(blue, "-") + "}\n"
		nets += "  - {name: blue, multus: {networkName: blue-net}}\n"
	}
	return y + nets
}

// hotplugInit is the hot-plug guest's /init: eth0's lease, then a ping of
// the masquerade gateway every 0.2 s for the whole test; it waits for
// eth1 (a hot-plugged NIC: the kernel's PCIe/ACPI hotplug), leases it
// ("lease1"), pings peer ("peer-ok"), reports its carrier going down and
// up again, then eth1 going away, and last the eth0 ping's statistics
// ("ping0": sent, received, the replies and the last reply's sequence
// number; the echo in flight when ping is stopped may go unanswered).
func hotplugInit(modules []string, peer string) string {
	var b strings.Builder
	w := func(s string) { io.WriteString(&b, s+"\n") }
	w("#!/bin/busybox sh")
	w("export PATH=/bin")
	w("mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev; mount -t tmpfs tmpfs /tmp")
	w("m() { read -r u _ </proc/uptime; echo \"" + marker + " $* t=$u\" >/dev/console; }")
	w("m init")
	for _, mod := range modules {
		w("insmod /lib/modules/" + filepath.Base(mod) + " || m insmod-failed " + filepath.Base(mod))
	}
	w("ip link set lo up; ip link set eth0 up")
	w("udhcpc -i eth0 -f -q -n -t 10 -T 2 -O mtu -s /udhcpc.script >/tmp/udhcpc.log 2>&1 || m lease-failed")
	w("ping -i 0.2 10.0.2.1 >/tmp/ping0.out 2>&1 &")
	w("p0=$!")
	w("m pinging")
	w("while [ ! -e /sys/class/net/eth1 ]; do sleep 0.1; done")
	w("m eth1-seen")
	w("ip link set eth1 up")
	w("udhcpc -i eth1 -f -q -n -t 10 -T 2 -s /udhcpc1.script >/tmp/udhcpc1.log 2>&1 || { m lease1-failed; cat /tmp/udhcpc1.log >/dev/console; }")
	w("if ping -A -c 3 -W 2 " + peer + " >/tmp/peer.out 2>&1; then m peer-ok $(grep -E 'packets transmitted' /tmp/peer.out); else m peer-failed $(tail -n 2 /tmp/peer.out); fi")
	w("c=1; while [ -e /sys/class/net/eth1 ]; do n=$(cat /sys/class/net/eth1/carrier 2>/dev/null)")
	w("  if [ \"$n\" = 0 ] && [ $c = 1 ]; then c=0; m carrier-down; fi")
	w("  if [ \"$n\" = 1 ] && [ $c = 0 ]; then c=1; m carrier-up; fi")
	w("  sleep 0.1; done")
	w("m eth1-gone")
	w("sleep 2; kill -INT $p0; wait $p0")
	w("m ping0 $(grep -E 'packets transmitted' /tmp/ping0.out) replies=$(grep -c 'seq=' /tmp/ping0.out) last$(grep -o 'seq=[0-9]*' /tmp/ping0.out | tail -n 1)")
	w("while true; do sleep 3600; done")
	return b.String()
}

// udhcpc1Script configures eth1 from its lease and reports it.
const udhcpc1Script = `#!/bin/sh
case "$1" in
bound|renew)
	ip addr add "$ip/$mask" dev "$interface"
	read -r u _ </proc/uptime
	echo "` + marker + ` lease1 ip=$ip mask=$mask serverid=$serverid t=$u" >/dev/console
	;;
esac
exit 0
`

// mustWaitConsole is waitConsole failing the test.
func mustWaitConsole(ctx context.Context, t *testing.T, c *console, whats ...string) string {
	t.Helper()
	l, err := waitConsole(ctx, c, whats...)
	require.NoError(t, err)
	t.Logf("guest: %s", l)
	return l
}

// linkAsCNILeft is what a CNI plugin made of a pod link: index, MAC, MTU,
// flags, master, addresses and routes.
func linkAsCNILeft(t *testing.T, ns *testutil.NS, name string) string {
	t.Helper()
	l, err := ns.Handle.LinkByName(name)
	require.NoError(t, err)
	a := l.Attrs()
	out := fmt.Sprintf("%s index=%d mac=%s mtu=%d up=%v master=%d", a.Name, a.Index, a.HardwareAddr, a.MTU, a.Flags&1 == 1, a.MasterIndex)
	addrs, err := ns.Handle.AddrList(l, netlink.FAMILY_ALL)
	require.NoError(t, err)
	for _, ad := range addrs {
		if ad.IP.IsGlobalUnicast() {
			out += " addr=" + ad.IPNet.String()
		}
	}
	routes, err := ns.Handle.RouteList(l, netlink.FAMILY_V4)
	require.NoError(t, err)
	for _, r := range routes {
		out += fmt.Sprintf(" route=%v/%v", r.Dst, r.Gw)
	}
	return out
}

// pingFrom sends one ICMP echo to ip from ns and reports whether the
// reply came within a second.
func pingFrom(t *testing.T, ns *testutil.NS, ip string) bool {
	t.Helper()
	var conn *icmp.PacketConn
	require.NoError(t, ns.Do(func() (err error) { conn, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0"); return err }))
	defer conn.Close()
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: os.Getpid() & 0xffff, Seq: 1, Data: []byte("virtnet")}}
	b, err := msg.Marshal(nil)
	require.NoError(t, err)
	dst := &net.IPAddr{IP: net.ParseIP(ip)}
	_, err = conn.WriteTo(b, dst)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(time.Second)))
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return false
		}
		if from.String() != ip {
			continue
		}
		if m, err := icmp.ParseMessage(1, buf[:n]); err == nil && m.Type == ipv4.ICMPTypeEchoReply {
			return true
		}
	}
}

// TestHotplugGuest is a running guest's network changed live, through
// libvirt (Debian's libvirtd, private, in the pod's namespace: the
// lead's testrig/testutil/libvirtd) and KubeVirt 1.x's order: the guest
// boots with eth0 (masquerade) and pings through it every 0.2 s for the
// whole test. A CNI plugin adds a secondary network's link to the running
// pod; a plug of it failing half-way (the kernel call 3 of phase1) is
// rolled back; then phase1 plugs it, running.Sync returns the device and
// starts its DHCP server, libvirt attaches it: the guest sees eth1, takes
// its lease from our server and pings a peer on that network. Set down
// (update-device), the guest's carrier goes to 0 and the peer cannot
// reach it; up again, it can. Unplugged (Sync's detach, then phase1), eth1
// is gone in the guest and the pod link is as the CNI left it. eth0 lost
// no ping. It logs the figures: plug request → guest lease and phase1's
// share; unplug; eth0's ping loss. The bridge binding needs a dummy link:
// on a kernel without, the test runs in the kernel VM, libvirtd and the
// TCG guest nested.
func TestHotplugGuest(t *testing.T) {
	if raceDetector {
		t.Skip("-race: the nested guest is too slow under the race detector")
	}
	t.Parallel() // beside the other kernel VMs: each runs on one host core
	capsCache := libvirtd.DefaultCapsCache()
	var setEnv map[string]string
	if os.Getenv(kernelvm.EnvInVM) != "1" {
		capsCache += "-kernelvm"
		setEnv = map[string]string{testutil.CNIPluginDirEnv: testutil.CNIPluginDir(t)}
	}
	if kernelvm.DelegateWith(t, kernelvm.Options{
		Needs:     []string{"dummy", "bridge", "veth", "tun"},
		Modules:   []string{"nf_tables", "nft_chain_nat", "nft_nat", "nft_masq", "nft_ct"},
		HostRoot:  true,
		MemoryMiB: 2048,
		Timeout:   15 * time.Minute,
		CacheDir:  capsCache,
		Env:       []string{"VIRTNET_KERNELVM_DIR"},
		SetEnv:    setEnv,
	}) {
		return
	}
	assets := requireGuest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))

	pod := testutil.NewFlannelPod(t)
	blueNet := testutil.NewCNINetwork(t, pod.Node, testutil.SecondarySpec)
	peer := &testutil.Pod{Pod: testutil.NewNS(t, "vn-peer"), Node: pod.Node}
	peerIP := blueNet.AttachSecondary(t, peer, "net1").IPs[0].IP.String()

	d := libvirtd.Start(t, libvirtd.Options{NetNS: pod.Pod.Path, CapsCache: capsCache})
	work := d.Path("")
	store, err := cache.New(filepath.Join(t.TempDir(), "cache"))
	require.NoError(t, err)
	p1 := phase1.Options{TapOwner: phase1.TapOwnerUID(d.UID), Logger: log}
	vmi := func(blue string) *api.VMI { return testutil.LoadVMI(t, hotplugGuestVMI(blue)) }
	require.NoError(t, phase1.Run(ctx, vmi(""), pod.Pod.Path, store, p1))

	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(resolv, []byte(podResolvConf), 0o644))
	hook := &prestart.Hook{
		VMI: vmi(""), Store: store, NetNS: pod.Pod.Path, InterfaceType: "ethernet", ResolvConf: resolv, Logger: log,
		Dirs: domxml.Options{PrivateDir: filepath.Join(work, "private"), EphemeralDir: filepath.Join(work, "ephemeral"),
			HotplugPorts: domxml.HotplugPortsKubeVirt},
	}
	running, err := hook.Run(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, running.Stop()) })
	dom := running.Domain()
	require.GreaterOrEqual(t, domxml.SpareRootPorts(dom), 3, "room for a hot-plugged NIC")

	var mods []string
	for _, m := range guestModules {
		mods = append(mods, filepath.Join(assets, "modules", m+".ko"))
	}
	// QEMU runs as the daemon's uid: the boot files go where it reads.
	initrd := d.Path("initramfs.cpio")
	require.NoError(t, writeInitramfs(initrd, guestFiles{
		busybox: filepath.Join(assets, "busybox"),
		modules: mods,
		files:   map[string]string{"init": hotplugInit(mods, peerIP), "udhcpc.script": udhcpcScript, "udhcpc1.script": udhcpc1Script},
	}))
	require.NoError(t, os.Chown(initrd, d.UID, d.UID))
	kb, err := os.ReadFile(guestKernel(assets))
	require.NoError(t, err)
	guestKernelFile := d.WriteFile("kernel", kb)
	consoleLog := d.Path("console.log")
	d.WriteFile("console.log", nil)
	forTCG(dom, guestKernelFile, initrd, consoleLog)
	domXML, err := dom.Marshal()
	require.NoError(t, err)
	started := time.Now()
	name, err := d.Create(ctx, domXML)
	require.NoError(t, err, d.Log())
	c := &console{path: consoleLog}
	t.Cleanup(func() {
		if t.Failed() {
			_ = c.poll()
			t.Logf("guest console:\n%s", strings.Join(c.lines, "\n"))
		}
	})
	liveXML := func() string {
		x, err := d.Virsh(ctx, "dumpxml", name)
		require.NoError(t, err)
		return x
	}
	mustWaitConsole(ctx, t, c, "lease", "lease-failed")
	mustWaitConsole(ctx, t, c, "pinging")
	t.Logf("guest up and pinging %s after virsh create", time.Since(started).Round(100*time.Millisecond))

	// Multus adds the secondary network's link to the running pod.
	blue := api.HashedPodInterface("blue")
	att := blueNet.AttachSecondary(t, pod, blue)
	cniLeft := linkAsCNILeft(t, pod.Pod, blue)

	// A plug that fails half-way (its third mutating kernel call, after
	// eth0's re-check): rolled back, the guest unaffected.
	nl, err := kernel.Open(pod.Pod.Path)
	require.NoError(t, err)
	count := &intercept.Driver{Inner: nl}
	recheck := p1
	recheck.Driver = count
	require.NoError(t, phase1.Run(ctx, vmi(""), pod.Pod.Path, store, recheck))
	_, eth0Calls := count.Counts()
	fd := &intercept.Driver{Inner: nl, Before: func(c intercept.Call) error {
		if c.Mutating && c.Seq == eth0Calls+3 {
			return syscall.ENOBUFS
		}
		return nil
	}}
	failed := p1
	failed.Driver = fd
	require.ErrorIs(t, phase1.Run(ctx, vmi("-"), pod.Pod.Path, store, failed), syscall.ENOBUFS)
	nl.Close()
	require.Equal(t, cniLeft, linkAsCNILeft(t, pod.Pod, blue), "the failed plug rolled back")
	_, err = running.Sync(ctx, liveXML(), vmi("-"))
	require.Error(t, err, "nothing to attach before phase1 finished blue")

	// The plug.
	plugStart := time.Now()
	require.NoError(t, phase1.Run(ctx, vmi("-"), pod.Pod.Path, store, p1))
	phase1Took := time.Since(plugStart)
	changes, err := running.Sync(ctx, liveXML(), vmi("-"))
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, phase2.OpAttach, changes[0].Op)
	require.NoError(t, d.Device(ctx, "attach-device", name, changes[0].XML), d.Log())
	mustWaitConsole(ctx, t, c, "eth1-seen")
	lease := mustWaitConsole(ctx, t, c, "lease1", "lease1-failed")
	plugTook := time.Since(plugStart)
	require.Contains(t, lease, "ip="+att.IPs[0].IP.String()+" ", "the pod link's address, from our DHCP server")
	require.Regexp(t, `^peer-ok 3 packets transmitted, 3 packets received`, mustWaitConsole(ctx, t, c, "peer-ok", "peer-failed"))
	changes, err = running.Sync(ctx, liveXML(), vmi("-"))
	require.NoError(t, err)
	require.Empty(t, changes, "attached")

	// Down and up.
	guestIP := att.IPs[0].IP.String()
	require.Eventually(t, func() bool { return pingFrom(t, peer.Pod, guestIP) }, 30*time.Second, 500*time.Millisecond, "the peer reaches the guest")
	for _, st := range []struct{ state, report string }{{"down", "carrier-down"}, {"up", "carrier-up"}} {
		changes, err = running.Sync(ctx, liveXML(), vmi(", state: "+st.state))
		require.NoError(t, err)
		require.Len(t, changes, 1)
		require.Equal(t, phase2.OpUpdate, changes[0].Op)
		require.NoError(t, d.Device(ctx, "update-device", name, changes[0].XML))
		mustWaitConsole(ctx, t, c, st.report)
		if st.state == "down" {
			require.False(t, pingFrom(t, peer.Pod, guestIP), "link down: no traffic")
		} else {
			require.Eventually(t, func() bool { return pingFrom(t, peer.Pod, guestIP) }, 30*time.Second, 500*time.Millisecond, "link up: traffic again")
		}
	}

	// Unplug: the launcher detaches first, then phase1 undoes the pod.
	unplugStart := time.Now()
	absent := vmi(", state: absent")
	changes, err = running.Sync(ctx, liveXML(), absent)
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, phase2.OpDetach, changes[0].Op)
	require.Len(t, running.Servers(), 1, "blue's DHCP server stopped")
	require.NoError(t, d.Device(ctx, "detach-device", name, changes[0].XML))
	mustWaitConsole(ctx, t, c, "eth1-gone")
	require.Eventually(t, func() bool { return !strings.Contains(liveXML(), "ua-blue") }, time.Minute, 250*time.Millisecond)
	require.NoError(t, phase1.Run(ctx, absent, pod.Pod.Path, store, p1))
	unplugTook := time.Since(unplugStart)
	require.Equal(t, cniLeft, linkAsCNILeft(t, pod.Pod, blue), "the pod link as the CNI left it")

	stats := mustWaitConsole(ctx, t, c, "ping0")
	m := regexp.MustCompile(`(\d+) packets transmitted, (\d+) packets received.* replies=(\d+) lastseq=(\d+)`).FindStringSubmatch(stats)
	require.NotNil(t, m, stats)
	sent, _ := strconv.Atoi(m[1])
	replies, _ := strconv.Atoi(m[3])
	last, _ := strconv.Atoi(m[4])
	require.Greater(t, sent, 20)
	// Lost: a sequence number below the last answered one without a
	// reply. The echo sent last may still be in flight when ping stops.
	lost := last + 1 - replies
	t.Logf("figures: plug request → guest lease %s (phase1 %s); unplug (detach → eth1 gone → phase1) %s; eth0 ping %d sent, %d lost (%d unanswered at the stop)",
		plugTook.Round(10*time.Millisecond), phase1Took.Round(time.Millisecond), unplugTook.Round(10*time.Millisecond), sent, lost, sent-last-1)
	require.Zero(t, lost, "eth0 lost no ping")
	// Echoes still in flight when ping stops: one on a quiet machine; a
	// nested TCG guest on a slow one has had three (a round trip over 0.4 s).
	// A second's worth (five at 0.2 s) is still a round trip, not an outage.
	require.LessOrEqual(t, sent-last-1, 5, "at most the last second's echoes unanswered at the stop")
}
