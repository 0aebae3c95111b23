package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/internal/testutil"
)

const masqueradeVMI = `
kind: VirtualMachineInstance
metadata: {name: demo, namespace: default, uid: 0c6a4b34-0000-4000-8000-00000000d3m0}
spec:
  domain:
    devices:
      disks:
      - {name: cloudinit, disk: {bus: virtio}}
      interfaces:
      - {name: default, masquerade: {}, ports: [{port: 80}]}
  networks:
  - {name: default, pod: {}}
  volumes:
  - name: cloudinit
    cloudInitNoCloud: {userData: "#cloud-config\n"}
`

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLaunchInPod runs the whole launcher in a pod namespace: once with
// -once, then serving DHCP until canceled; -cleanup undoes phase1.
func TestLaunchInPod(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))
	xmlPath := filepath.Join(dir, "domain.xml")
	args := []string{"-vmi", vmi, "-netns", pod.Pod.Name, "-dir", filepath.Join(dir, "work"),
		"-o", xmlPath, "-resolv", filepath.Join(dir, "none"), "-cleanup"}

	var out, errb syncBuffer
	require.Equal(t, 0, run(context.Background(), append(args, "-once"), &out, &errb), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	t.Logf("launcher -once:\n%s", out.String())
	require.Contains(t, out.String(), "DHCP server for interface default on k6t-eth0: 10.0.2.2/24")
	require.Contains(t, out.String(), "phase1 undone")
	b, err := os.ReadFile(xmlPath)
	require.NoError(t, err)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(b)))
	require.Len(t, dom.Devices.Interfaces, 1)
	require.Equal(t, "tap0", dom.Devices.Interfaces[0].Target.Dev)
	require.Equal(t, "no", dom.Devices.Interfaces[0].Target.Managed)
	_, err = pod.Pod.Handle.LinkByName("k6t-eth0")
	require.Error(t, err, "-cleanup removes the bridge")

	// Serving until canceled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out2, errb2 syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, args, &out2, &errb2) }()
	require.Eventually(t, func() bool { return strings.Contains(out2.String(), "serving DHCP") }, 30*time.Second, 50*time.Millisecond,
		"stdout:\n%s\nstderr:\n%s", out2.String(), errb2.String())
	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, "stderr:\n%s", errb2.String())
	case <-time.After(30 * time.Second):
		t.Fatal("launcher did not stop after the context ended")
	}
	require.Contains(t, out2.String(), "stopped")
}
