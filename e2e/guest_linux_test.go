package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/internal/testutil"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2/dhcp"
	"github.com/virtnet/virtnet/phase2/prestart"
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

// Bootline: no ACPI interpreter and no crypto self-tests under TCG.
const guestCmdline = "console=ttyS0 loglevel=3 panic=-1 rdinit=/init cryptomgr.notests mitigations=off"

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

// requireGuest skips (testutil.Skip) unless everything the test runs is
// here, and returns the asset directory.
func requireGuest(t *testing.T) string {
	t.Helper()
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
	assets := requireGuest(t)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)

	// Short paths: libvirt puts unix sockets under the root.
	work, err := os.MkdirTemp("", "vn-e2e-")
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
	require.NoError(t, os.WriteFile(resolv, []byte("search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"), 0o644))

	vmi, err := api.Load([]byte(guestVMI))
	require.NoError(t, err)
	pod := testutil.NewPod(t)

	// The node's server: answers each connection with the source it saw.
	seen := make(chan string, 4)
	var ln net.Listener
	require.NoError(t, pod.Node.Do(func() (err error) { ln, err = net.Listen("tcp4", "10.244.1.1:0"); return err }))
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

	// phase1, as virt-handler would run it.
	store, err := cache.New(filepath.Join(work, "cache"))
	require.NoError(t, err)
	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, phase1.Options{Logger: log}))
	rec, err := store.ReadInterface(vmi.Metadata.UID, "default")
	require.NoError(t, err)
	t.Logf("phase1 record: bridge %s tap %s mac %s ipv4 %s gateway %s mtu %d", rec.Bridge, rec.Tap, rec.MAC, rec.IPv4, rec.Gateway, rec.MTU)

	// The domain, then the hook: it adds the ethernet interface, makes
	// the overlay and the NoCloud image, and starts the DHCP server in the
	// pod namespace.
	dom, err := domxml.Build(vmi, dirs)
	require.NoError(t, err)
	hook := &prestart.Hook{
		VMI: vmi, Domain: dom, Store: store, Dirs: dirs,
		ResolvConf:  resolv,
		Render:      binding.RenderOptions{InterfaceType: binding.InterfaceEthernet},
		DHCPOptions: []dhcp.Option{dhcp.WithNetNS(pod.Pod.Path)},
		Logger:      log,
	}
	running, err := hook.Run(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, running.Stop()) })
	require.Len(t, running.Servers(), 1)
	require.Len(t, dom.Devices.Interfaces, 1)
	nic := dom.Devices.Interfaces[0]
	require.NotNil(t, nic.Target)
	require.Equal(t, rec.Tap, nic.Target.Dev)
	require.Equal(t, "no", nic.Target.Managed)

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
		files: map[string]string{
			"init":          guestInit(mods, ln.Addr().String()),
			"udhcpc.script": udhcpcScript,
		},
	}))
	forTCG(dom, filepath.Join(assets, "vmlinuz"), initrd, consoleLog)
	xml, err := dom.Marshal()
	require.NoError(t, err)
	domainXML := filepath.Join(work, "domain.xml")
	require.NoError(t, os.WriteFile(domainXML, []byte(xml), 0o644))

	start := time.Now()
	v := startVirtQemuRun(t, filepath.Join(work, "libvirt"), domainXML, pod.Pod.Path)
	c := &console{path: consoleLog}
	t.Cleanup(func() {
		if t.Failed() {
			_ = c.poll()
			t.Logf("guest console:\n%s", strings.Join(c.lines, "\n"))
		}
	})

	line, err := c.waitFor(ctx, v, "init")
	require.NoError(t, err)
	seenInit := time.Since(start)
	// The guest's uptime at init dates its kernel's start: what came
	// before is libvirt (probing QEMU's capabilities: the root is new, so
	// nothing is cached), QEMU's start and the firmware.
	t.Logf("guest init seen %s after virt-qemu-run started: %q; guest kernel started about %s after virt-qemu-run",
		seenInit.Round(100*time.Millisecond), line, (seenInit - uptime(t, line)).Round(100*time.Millisecond))
	line, err = c.waitFor(ctx, v, "lease", "lease-failed")
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	if mods, ok := c.report("modules"); ok {
		t.Logf("DHCP lease %s after the guest's modules were loaded (udhcpc start → bound, guest clock)",
			(uptime(t, line) - uptime(t, mods)).Round(10*time.Millisecond))
	}
	require.Contains(t, line, "lease ip=10.0.2.2 mask=24 router=10.0.2.1")
	require.Contains(t, line, "dns=10.96.0.10")
	require.Contains(t, line, "hostname=e2e-guest")
	require.Contains(t, line, "mtu=1440")

	line, err = c.waitFor(ctx, v, "hostname", "hostname-failed")
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	require.Regexp(t, `^hostname e2e-guest from /dev/vd`, line)
	line, err = c.waitFor(ctx, v, "userdata")
	require.NoError(t, err)
	require.Contains(t, line, "user-data-ran-on-e2e-guest")

	line, err = c.waitFor(ctx, v, "ping-ok", "ping-failed")
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, line)

	line, err = c.waitFor(ctx, v, "source")
	require.NoError(t, err)
	t.Logf("guest: %s", line)
	require.Equal(t, "source 10.244.1.7", strings.Fields(line)[0]+" "+strings.Fields(line)[1])
	select {
	case host := <-seen:
		require.Equal(t, "10.244.1.7", host, "the node must see the pod IP as the guest's source")
	case <-ctx.Done():
		t.Fatal("the node's server saw no connection")
	}

	_, err = c.waitFor(ctx, v, "listening")
	require.NoError(t, err)
	var reply string
	require.Eventually(t, func() bool {
		var got []byte
		err := pod.Node.Do(func() error {
			conn, err := net.DialTimeout("tcp4", "10.244.1.7:8080", 2*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
			got, err = io.ReadAll(conn)
			return err
		})
		reply = strings.TrimSpace(string(got))
		return err == nil && reply != ""
	}, 30*time.Second, time.Second, "the node must reach the guest on 10.244.1.7:8080")
	t.Logf("node → 10.244.1.7:8080 answered %q", reply)
	require.Equal(t, "hello from e2e-guest", reply)
	t.Logf("whole run (virt-qemu-run start → inbound checked): %s", time.Since(start).Round(time.Second))
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
// CPU model TCG has, direct boot of kernel and initrd, the serial console
// into a file, and none of the devices the busybox guest has no use for
// (the container disk, graphics, the guest agent channel).
func forTCG(dom *libvirtxml.Domain, kernel, initrd, consoleLog string) {
	dom.Type = "qemu"
	dom.CPU = &libvirtxml.DomainCPU{Mode: "custom", Match: "exact", Model: &libvirtxml.DomainCPUModel{Value: "qemu64", Fallback: "allow"}}
	dom.OS.Kernel, dom.OS.Initrd, dom.OS.Cmdline = kernel, initrd, guestCmdline
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
