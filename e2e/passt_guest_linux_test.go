package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/internal/nsexec"
	"github.com/virtnet/virtnet/internal/testing/testutil"
)

// passtUID is the qemu user of KubeVirt's virt-launcher, which passt runs
// as.
const passtUID = 107

// passtVMI is the passt guest: a non-root VMI (passt and QEMU as uid
// 107, phase1 widens ping_group_range to its group), passt: {} with TCP
// 22 and 8080 forwarded (22 is below the pod's unprivileged port start
// until phase1 lowers it), and a fixed MAC, which QEMU's -device takes.
const passtVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cni-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000000c3
  annotations:
    kubevirt.io/nonroot: ""
spec:
  domain:
    resources:
      requests:
        memory: 192Mi
    devices:
      interfaces:
      - name: default
        passt: {}
        macAddress: 02:00:00:5a:55:01
        ports:
        - {name: ssh, protocol: TCP, port: 22}
        - {name: http, protocol: TCP, port: 8080}
  networks:
  - name: default
    pod: {}
`

// usePasst replaces the domain's passt interface, which libvirt 9.0
// refuses (<backend type='passt'> needs libvirt 9.2: the form stays
// golden-checked by binding/passt's TestRender and is checked here to be
// what the hook rendered), by QEMU's own stream netdev on the socket of a
// passt the test starts in the pod's namespace as uid 107 with no
// capabilities, forwarding TCP 22 and 8080: what a virt-launcher whose
// libvirt cannot start passt does (<qemu:commandline>, through libvirt
// still, so that the rest of the domain is the one virtnet renders).
func usePasst(t *testing.T, dom *libvirtxml.Domain, pod *testutil.Pod, work string) {
	t.Helper()
	bin, err := exec.LookPath("passt")
	if err != nil {
		testutil.Skip(t, "passt in PATH (Debian package passt)")
	}
	nic := dom.Devices.Interfaces[0]
	require.NotNil(t, nic.Backend)
	require.Equal(t, "passt", nic.Backend.Type, "the hook renders passt's <backend>, which this libvirt refuses")
	require.NotNil(t, nic.MAC)
	mac := nic.MAC.Address

	// passt, unprivileged, needs to reach its socket's directory.
	require.NoError(t, os.Chmod(work, 0o711))
	dir := filepath.Join(work, "passt")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chown(dir, passtUID, passtUID))
	sock := filepath.Join(dir, "passt.sock")
	out := &bytes.Buffer{}
	// --no-map-gw: the gateway's address is the node's (the CNI's
	// gateway), not a name for the pod's own loopback.
	cmd := exec.Command(bin, "--foreground", "--no-map-gw", "--socket", sock, "--tcp-ports", "22,8080")
	cmd.Stdout, cmd.Stderr = out, out
	// setuid from root to 107 leaves no capability (no keepcaps, no
	// ambient ones).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true,
		Credential: &syscall.Credential{Uid: passtUID, Gid: passtUID, Groups: []uint32{}}}
	require.NoError(t, nsexec.Do(pod.Pod.Path, cmd.Start), "start passt in the pod")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Logf("passt output:\n%s", out.String())
	})
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 20*time.Second, 50*time.Millisecond,
		"passt's socket %s", sock)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") || strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") {
			t.Logf("passt %s", l)
		}
		if strings.HasPrefix(l, "Uid:") {
			require.Equal(t, []string{"Uid:", "107", "107", "107", "107"}, strings.Fields(l), "passt runs as uid 107")
		}
		if f := strings.Fields(l); len(f) == 2 && f[0] == "CapEff:" && f[1] != "0000000000000000" {
			// passt sandboxes itself in a user namespace of its own,
			// where it holds what it needs; none in the pod's.
			own, err := os.Readlink("/proc/self/ns/user")
			require.NoError(t, err)
			its, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
			require.NoError(t, err)
			require.NotEqual(t, own, its, "passt holds capabilities (%s) outside a user namespace of its own", f[1])
		}
	}

	// QEMU creates the devices of <qemu:commandline> before libvirt's
	// own: an explicit slot of the root complex that libvirt's
	// allocator (slots from 1 up) does not reach with this few devices.
	dev := "virtio-net-pci,netdev=passt0,bus=pcie.0,addr=0x10,mac=" + mac
	dom.Devices.Interfaces = nil
	if dom.QEMUCommandline == nil {
		dom.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{}
	}
	for _, a := range []string{
		"-netdev", "stream,id=passt0,server=off,addr.type=unix,addr.path=" + sock,
		"-device", dev,
	} {
		dom.QEMUCommandline.Args = append(dom.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: a})
	}
}

// TestPasstGuest boots a guest on Debian's passt after virtnet's phase1
// (which widened ping_group_range to the qemu group and lowered
// ip_unprivileged_port_start for it): passt runs in the flannel-like
// pod's namespace as uid 107 without capabilities, QEMU reaches it
// through -netdev stream (see usePasst). The guest leases the pod's IP
// from passt's DHCP, pings the node through passt's ping sockets (which
// fail without phase1's ping_group_range).
//
// Not checked, because it does not work reliably here (see
// docs/bridge-ipv6-and-mtu.md): TCP through passt (the guest's
// connection to the node completes in some runs and stalls after passt's
// SYN-ACK in others; the node's connections to the forwarded ports 22 and
// 8080 are accepted by passt and never answered), and the dual-stack pod
// (passt's DHCPv6 does not answer the guest's Solicit).
func TestPasstGuest(t *testing.T) {
	if raceDetector {
		// CI runs the suite twice, the second time under -race; this
		// guest checks the kernel's and the guest's view, which -race
		// does not change: it runs in the build without -race only.
		t.Log("race build: passt guest runs in the build without -race")
		return
	}
	began := time.Now()
	pod := testutil.NewFlannelPod(t)
	g := bootGuest(t, guestCase{vmi: passtVMI, pod: pod, ping: pod.NodeIP.String(), passt: true})
	l := g.lease()
	require.Equal(t, pod.PodIP.String(), l["ip"], "passt leases the pod's IP")
	require.Equal(t, "24", l["mask"])
	require.Equal(t, pod.Gateway.String(), l["router"])
	require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
	g.done()
	t.Logf("passt/flannel: wall time %s", time.Since(began).Round(time.Second))
}
