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
	"github.com/virtnet/virtnet/internal/testutil"
)

// passtUID is the qemu user of KubeVirt's virt-launcher, which passt runs
// as.
const passtUID = 107

// passtVMI is the passt guest: passt: {} with TCP 22 and 8080 forwarded
// (22 is below the pod's unprivileged port start until phase1 lowers it),
// and a fixed MAC, which QEMU's -device takes.
const passtVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cni-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000000c3
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
	cmd := exec.Command(bin, "--foreground", "--socket", sock, "--tcp-ports", "22,8080")
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
	}

	dom.Devices.Interfaces = nil
	if dom.QEMUCommandline == nil {
		dom.QEMUCommandline = &libvirtxml.DomainQEMUCommandline{}
	}
	for _, a := range []string{
		"-netdev", "stream,id=passt0,server=off,addr.type=unix,addr.path=" + sock,
		"-device", "virtio-net-pci,netdev=passt0,mac=" + mac,
	} {
		dom.QEMUCommandline.Args = append(dom.QEMUCommandline.Args, libvirtxml.DomainQEMUCommandlineArg{Value: a})
	}
}

// TestPasstGuest boots a guest on Debian's passt after virtnet's phase1
// (which widened ping_group_range and lowered ip_unprivileged_port_start
// for it): passt runs in the pod's namespace as uid 107 without
// capabilities, QEMU reaches it through -netdev stream (see usePasst).
// The guest leases the pod's IP from passt's DHCP, pings the node and
// reaches its server with the pod IP as source, and the node reaches the
// guest at the pod IP on the forwarded ports 22 and 8080 (22: the
// unprivileged-port case, kubevirt #16735). On the dual-stack pod the
// guest also leases the pod's IPv6 from passt's DHCPv6, takes its default
// route from passt's router advertisements, and the same holds over
// IPv6.
func TestPasstGuest(t *testing.T) {
	for _, sh := range []struct {
		name string
		pod  func(testing.TB) *testutil.Pod
	}{
		{"flannel", testutil.NewFlannelPod},
		{"dual-stack", testutil.NewDualStackPod},
	} {
		t.Run(sh.name, func(t *testing.T) {
			began := time.Now()
			pod := sh.pod(t)
			v6 := pod.PodIPv6 != nil
			g := bootGuest(t, guestCase{vmi: passtVMI, pod: pod, ping: pod.NodeIP.String(), passt: true, dhcp6: v6})
			l := g.lease()
			require.Equal(t, pod.PodIP.String(), l["ip"], "passt leases the pod's IP")
			require.Equal(t, pod.Gateway.String(), l["router"])
			require.Regexp(t, `^ping-ok 3 packets transmitted, 3 packets received`, g.wait("ping-ok", "ping-failed"))
			g.requireSource(pod.PodIP)
			if v6 {
				line := g.wait("lease6", "lease6-failed")
				require.True(t, strings.HasPrefix(line, "lease6 "), "guest: %s", line)
				require.Equal(t, pod.PodIPv6.String(), parseKV(strings.TrimPrefix(line, "lease6 "))["address"], "passt leases the pod's IPv6")
				require.Regexp(t, `default via fe80::\S+ dev eth0`, g.wait("routes6"))
				require.Regexp(t, `^ping6-ok 3 packets transmitted, 3 packets received`, g.wait("ping6-ok", "ping6-failed"))
				line = g.wait("source6")
				require.Equal(t, "source6 "+pod.PodIPv6.String(), strings.Join(strings.Fields(line)[:2], " "))
			}
			g.wait("listening")
			for _, port := range []int{22, 8080} {
				require.True(t, strings.HasPrefix(g.dial(pod.Node, pod.PodIP, port), "hello from cni-guest ip="+pod.PodIP.String()), "the node reaches the guest on port %d", port)
				if v6 {
					require.True(t, strings.HasPrefix(g.dial(pod.Node, pod.PodIPv6, port), "hello from cni-guest"), "the node reaches the guest over IPv6 on port %d", port)
				}
			}
			g.done()
			t.Logf("passt/%s: wall time %s", sh.name, time.Since(began).Round(time.Second))
		})
	}
}
