package e2e

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// clampVMI is the masquerade guest with its MTU clamped to 1400
// (api.GuestMTUAnnotation) and TCP 8080 and 9000 declared.
const clampVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cni-guest
  namespace: default
  uid: 5b7e1c1e-e2e0-4a1b-9c55-0000000000c2
  annotations:
    virtnet.io/guest-mtu: default=1400
spec:
  domain:
    resources:
      requests:
        memory: 192Mi
    devices:
      interfaces:
      - name: default
        masquerade: {}
        ports:
        - {name: http, protocol: TCP, port: 8080}
        - {name: bulk, protocol: TCP, port: 9000}
  networks:
  - name: default
    pod: {}
`

// bulkBytes is what the node sends the guest in one connection.
const bulkBytes = 4 << 20

// TestMasqueradeGuestMTUClamp: the flannel-like pod's link has MTU 1450,
// the VMI clamps its interface to 1400. The masquerade binding is the one
// that can take a clamp (the pod namespace routes between the pod link and
// the VM's bridge, and answers bigger packets with "fragmentation
// needed"), and it runs without the kernel VM: the cheapest guest that
// proves it. The record, the bridge, the tap, the domain's <mtu> and the
// DHCP lease (option 26) all say 1400 while the pod link keeps 1450; in
// the guest the link has MTU 1400, `ping -M do -s 1372` to the node
// passes (1400-byte packets) and `-s 1373` fails (the kernel refuses a
// 1401-byte packet it may not fragment), and 4 MiB sent by the node over
// TCP arrive whole.
func TestMasqueradeGuestMTUClamp(t *testing.T) {
	if raceDetector {
		// CI runs the suite twice, the second time under -race; this
		// guest checks the kernel's and the guest's view, which -race
		// does not change: it runs in the build without -race only.
		t.Log("race build: the MTU clamp guest runs in the build without -race")
		return
	}
	began := time.Now()
	pod := testutil.NewFlannelPod(t)
	require.Equal(t, 1450, pod.MTU)
	g := bootGuest(t, guestCase{vmi: clampVMI, pod: pod, ping: pod.NodeIP.String(), mtuProbe: true})

	rec, err := g.store.ReadInterface(g.vmi.Metadata.UID, "default")
	require.NoError(t, err)
	require.Equal(t, 1400, rec.MTU, "the record")
	for name, want := range map[string]int{rec.Bridge: 1400, rec.Tap: 1400, pod.PodLink: 1450} {
		l, err := pod.Pod.Handle.LinkByName(name)
		require.NoError(t, err)
		require.Equal(t, want, l.Attrs().MTU, "MTU of %s in the pod", name)
	}
	require.NotNil(t, g.dom.Devices.Interfaces[0].MTU)
	require.Equal(t, uint(1400), g.dom.Devices.Interfaces[0].MTU.Size, "the domain's <mtu>")
	l := g.lease()
	require.Equal(t, "1400", l["mtu"], "DHCP option 26")
	require.Contains(t, g.wait("addr"), "10.0.2.2/24 mtu=1400")

	require.Regexp(t, `^pingdo-1372 ok 3 packets transmitted, 3 received`, g.wait("pingdo-1372"))
	line := g.wait("pingdo-1373")
	require.True(t, strings.HasPrefix(line, "pingdo-1373 failed"), "1373 data bytes with don't fragment must not leave the guest: %s", line)
	require.Contains(t, line, "message too long")

	g.wait("listening")
	data := bytes.Repeat([]byte("virtnet-mtu-clamp\n"), bulkBytes/18+1)[:bulkBytes]
	require.NoError(t, pod.Node.Do(func() error {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(pod.PodIP.String(), "9000"), 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Minute))
		if _, err := c.Write(data); err != nil {
			return err
		}
		return c.(*net.TCPConn).CloseWrite()
	}))
	require.Equal(t, "bulk "+strconv.Itoa(bulkBytes), strings.Join(strings.Fields(g.wait("bulk"))[:2], " "), "the node's bulk transfer arrives whole")
	g.done()
	t.Logf("masquerade/mtu-clamp: wall time %s", time.Since(began).Round(time.Second))
}
