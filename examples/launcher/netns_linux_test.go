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

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/testrig/testutil"
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
		"-o", xmlPath, "-resolv", filepath.Join(dir, "none"), "-cleanup", "-interface-type", "ethernet"}

	var out, errb syncBuffer
	require.Equal(t, 0, run(context.Background(), append(args, "-once"), &out, &errb), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	t.Logf("launcher -once:\n%s", errb.String())
	require.Empty(t, out.String(), "with -o nothing goes to stdout")
	require.Contains(t, errb.String(), "DHCP server for interface default on k6t-eth0: 10.0.2.2/24")
	require.Contains(t, errb.String(), "phase1 undone")
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
	require.Eventually(t, func() bool { return strings.Contains(errb2.String(), "serving DHCP") }, 30*time.Second, 50*time.Millisecond,
		"stdout:\n%s\nstderr:\n%s", out2.String(), errb2.String())
	cancel()
	select {
	case c := <-code:
		require.Equal(t, 0, c, "stderr:\n%s", errb2.String())
	case <-time.After(30 * time.Second):
		t.Fatal("launcher did not stop after the context ended")
	}
	require.Contains(t, errb2.String(), "stopped")
}

// TestLaunchSRIOV: the launcher hands its environment to the hook, where
// an SR-IOV interface finds its VF: the device plugin's variables give
// the hostdev its PCI address.
func TestLaunchSRIOV(t *testing.T) {
	dom, _ := launchSRIOV(t, sriovVMI)
	require.Len(t, dom.Devices.Hostdevs, 1)
	src := dom.Devices.Hostdevs[0].SubsysPCI.Source.Address
	require.Equal(t, [4]uint{0, 0x3b, 2, 1}, [4]uint{*src.Domain, *src.Bus, *src.Slot, *src.Function})
	require.Equal(t, "ua-sriov-s1", dom.Devices.Hostdevs[0].Alias.Name)

	// KubeVirt 1.x's downward-API file, when there, names the VF first
	// (issue 22 item 7).
	netInfo := filepath.Join(t.TempDir(), "network-info")
	require.NoError(t, os.WriteFile(netInfo, []byte(`{"interfaces":[{"network":"s1","deviceInfo":{"type":"pci","version":"1.1.0","pci":{"pci-address":"0000:65:00.4"}}}]}`), 0o644))
	dom, _ = launchSRIOV(t, sriovVMI, "-network-info", netInfo)
	require.Len(t, dom.Devices.Hostdevs, 1)
	src = dom.Devices.Hostdevs[0].SubsysPCI.Source.Address
	require.Equal(t, [4]uint{0, 0x65, 0, 4}, [4]uint{*src.Domain, *src.Bus, *src.Slot, *src.Function})
}

const sriovVMI = `
kind: VirtualMachineInstance
metadata: {name: vm-sriov, namespace: default, uid: 3c2b1a09-8f7e-4d6c-9b5a-493827160504}
spec:
  domain: {devices: {interfaces: [{name: s1, sriov: {}}]}}
  networks: [{name: s1, multus: {networkName: sriov-net}}]
`

// launchSRIOV runs the launcher once (-once -cleanup) on a fresh pod for a
// manifest whose one interface is SR-IOV s1, its VF given by the device
// plugin's variables, and returns the domain and the launcher's stderr.
func launchSRIOV(t *testing.T, manifest string, args ...string) (libvirtxml.Domain, string) {
	t.Helper()
	pod := testutil.NewPod(t)
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(manifest), 0o644))
	t.Setenv("KUBEVIRT_RESOURCE_NAME_s1", "intel.com/sriov_netdevice")
	t.Setenv("PCIDEVICE_INTEL_COM_SRIOV_NETDEVICE", "0000:3b:02.1")
	xmlPath := filepath.Join(dir, "domain.xml")
	var out, errb syncBuffer
	require.Equal(t, 0, run(context.Background(), append([]string{"-vmi", vmi, "-netns", pod.Pod.Name, "-dir", filepath.Join(dir, "work"),
		"-o", xmlPath, "-resolv", filepath.Join(dir, "none"), "-cleanup", "-once"}, args...), &out, &errb), "stderr:\n%s", errb.String())
	b, err := os.ReadFile(xmlPath)
	require.NoError(t, err)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(b)))
	return dom, errb.String()
}

// TestStdoutIsXML: without -o, stdout is the domain XML alone (progress
// and logs go to stderr), so that `launcher > domain.xml` is XML; with the
// default interface type and CAP_NET_ADMIN (root) the NIC is
// type='bridge'.
func TestStdoutIsXML(t *testing.T) {
	pod := testutil.NewPod(t)
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))
	var out, errb syncBuffer
	args := []string{"-vmi", vmi, "-netns", pod.Pod.Name, "-dir", filepath.Join(dir, "work"),
		"-resolv", filepath.Join(dir, "none"), "-cleanup", "-once", "-v"}
	require.Equal(t, 0, run(context.Background(), args, &out, &errb), "stderr:\n%s", errb.String())
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(out.String()), "stdout is XML:\n%s", out.String())
	require.Len(t, dom.Devices.Interfaces, 1)
	require.NotNil(t, dom.Devices.Interfaces[0].Source.Bridge, "default with CAP_NET_ADMIN: type='bridge'")
	require.Contains(t, errb.String(), "launcher: phase1 done")
}

// TestErrorsDoNotStutter: a phase1 failure names phase1 once.
func TestErrorsDoNotStutter(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))
	var out, errb syncBuffer
	code := run(context.Background(), []string{"-vmi", vmi, "-netns", "virtnet-no-such-ns", "-dir", filepath.Join(dir, "work")}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "launcher: phase1: open namespace: ")
	require.Equal(t, 1, strings.Count(errb.String(), "phase1:"), errb.String())
}

// TestLaunchWithoutUID: a manifest without metadata.uid is launched with
// the uid api.Load derives for it (api.DerivedUID), so the domain UUID is
// the one virtnet-xml's preview showed; before, phase1 refused the VMI's
// cache directory name.
func TestLaunchWithoutUID(t *testing.T) {
	const manifest = `
kind: VirtualMachineInstance
metadata: {name: vm-nouid, namespace: default}
spec:
  domain: {devices: {interfaces: [{name: s1, sriov: {}}]}}
  networks: [{name: s1, multus: {networkName: sriov-net}}]
`
	dom, stderr := launchSRIOV(t, manifest)
	want, err := api.Load([]byte(manifest))
	require.NoError(t, err)
	require.Equal(t, api.DerivedUID("default", "vm-nouid"), want.Metadata.UID)
	require.Equal(t, domxml.DomainUUID(want), dom.UUID)
	require.Contains(t, stderr, "uid "+want.Metadata.UID)
}
