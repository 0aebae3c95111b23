//go:build linux

package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/internal/names"
	"github.com/virtnet/virtnet/kubevirt/hookapi/v1alpha3"
	"github.com/virtnet/virtnet/kubevirt/kvplugin"
	"github.com/virtnet/virtnet/testrig/kernelvm"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// KubeVirt v1.9.0's domain and VMI for a virtnet-bridge interface on the
// pod network, embedded: the kernel VM sees no host files.
var (
	//go:embed testdata/kubevirt-v1.9.0/domain-bridge.xml
	kubevirtBridgeDomain []byte
	//go:embed testdata/kubevirt-v1.9.0/vmi-bridge.json
	kubevirtBridgeVMI []byte
)

// TestSidecarBridgeInVM is the bridge plugin's sidecar as KubeVirt runs
// it (uid 107, no capabilities, in the pod's namespace, over its socket)
// after phase1 of the bridge binding (a dummy takes eth0's place: inside
// the kernel VM here). OnDefineDomain with the domain and VMI KubeVirt
// v1.9.0 renders for `binding: {name: virtnet-bridge}` adds the interface
// on the pod's tap with the pod's MAC, which the VM takes over; the result
// passes libvirt's schema (xmllint with domain.rng, what virt-xml-validate
// runs); a client with that MAC on the pod's bridge leases the pod's
// address and gateway from the sidecar's DHCP server; Shutdown ends it.
func TestSidecarBridgeInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test; the sidecar's server and DHCP code run under -race on this kernel in the masquerade sidecar tests and in TestDHCPFollowsTheVMI's kernel VM")
	// util-linux's setpriv at its host path (busybox's comes first on the
	// VM's PATH and lacks --reuid).
	setpriv := "/usr/bin/setpriv"
	var files map[string]string
	if os.Getenv(kernelvm.EnvInVM) != "1" {
		testutil.RequireRoot(t)
		files = vmTools(t, setpriv, xmllint)
	}
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"}, Files: files,
		QEMUArgs: []string{"-cpu", "qemu64,+rdrand"}}) {
		return
	}
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	podMAC := pod.PodMAC.String()
	prepare(t, pod, api.BindingBridge)
	sc := startSidecar(t, setpriv, pod, kvplugin.PluginBridge)
	c := &client{t: t, sock: sc.sock}
	require.Equal(t, []string{"v1alpha3"}, c.info().GetVersions())

	out, err := c.define(kubevirtBridgeDomain, kubevirtBridgeVMI)
	require.NoError(t, err, "OnDefineDomain; sidecar log:\n%s", sc.logs)
	validateKubeVirt(t, out)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	require.Len(t, dom.Devices.Interfaces, 1)
	ours := dom.Devices.Interfaces[0]
	require.Equal(t, "ua-default", ours.Alias.Name)
	require.NotNil(t, ours.Source.Ethernet)
	require.Equal(t, names.Tap("eth0", true), ours.Target.Dev)
	require.Equal(t, "no", ours.Target.Managed)
	require.Equal(t, "virtio-non-transitional", ours.Model.Type)
	require.Equal(t, uint(pod.MTU), ours.MTU.Size)
	require.Equal(t, podMAC, ours.MAC.Address, "bridge: the VM takes the pod interface's MAC")
	require.Len(t, dom.Devices.Disks, 1, "the rest of KubeVirt's domain is kept")

	env := lease(t, vmPort(t, pod, names.Bridge("eth0"), ours.MAC.Address))
	require.Equal(t, "10.244.1.7", env["ip"], "the pod's address")
	require.Equal(t, "24", env["mask"])
	require.Equal(t, "10.244.1.1", env["router"])
	require.Equal(t, "10.96.0.10", strings.TrimSpace(env["dns"]))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = v1alpha3.NewCallbacksClient(c.conn()).Shutdown(ctx, &v1alpha3.ShutdownParams{})
	require.NoError(t, err)
	select {
	case err := <-sc.exited:
		require.NoError(t, err, "sidecar exits cleanly after Shutdown")
	case <-time.After(30 * time.Second):
		t.Fatal("sidecar still running 30 s after Shutdown")
	}
}

// TestSidecarBridgeStatusMACInVM: a VMI that comes to this pod with a MAC
// in status.interfaces (a migration; the pod link's MAC is another) keeps
// it: the sidecar renders it and its DHCP server leases the pod's address
// to it (KubeVirt v1.9.0's spec > status > pod link, its bug #16696).
func TestSidecarBridgeStatusMACInVM(t *testing.T) {
	testutil.SkipCoveredUnderRace(t, "a kernel VM test; the sidecar's server and DHCP code run under -race on this kernel in the masquerade sidecar tests and in TestDHCPFollowsTheVMI's kernel VM")
	setpriv := "/usr/bin/setpriv"
	var files map[string]string
	if os.Getenv(kernelvm.EnvInVM) != "1" {
		testutil.RequireRoot(t)
		files = vmTools(t, setpriv, xmllint)
	}
	if kernelvm.DelegateWith(t, kernelvm.Options{Needs: []string{"dummy", "bridge", "veth", "tun"}, Files: files,
		QEMUArgs: []string{"-cpu", "qemu64,+rdrand"}}) {
		return
	}
	testutil.RequireRoot(t)
	const statusMAC = "02:16:69:60:00:01"
	var vmi map[string]any
	require.NoError(t, json.Unmarshal(kubevirtBridgeVMI, &vmi))
	vmi["status"].(map[string]any)["interfaces"] = []any{map[string]any{"name": "default", "podInterfaceName": "eth0", "mac": statusMAC}}
	vmiJSON, err := json.Marshal(vmi)
	require.NoError(t, err)

	pod := testutil.NewPod(t)
	require.NotEqual(t, statusMAC, pod.PodMAC.String())
	prepare(t, pod, api.BindingBridge)
	sc := startSidecar(t, setpriv, pod, kvplugin.PluginBridge)
	c := &client{t: t, sock: sc.sock}
	out, err := c.define(kubevirtBridgeDomain, vmiJSON)
	require.NoError(t, err, "OnDefineDomain; sidecar log:\n%s", sc.logs)
	var dom libvirtxml.Domain
	require.NoError(t, dom.Unmarshal(string(out)))
	require.Len(t, dom.Devices.Interfaces, 1)
	require.Equal(t, statusMAC, dom.Devices.Interfaces[0].MAC.Address)
	env := lease(t, vmPort(t, pod, names.Bridge("eth0"), statusMAC))
	require.Equal(t, "10.244.1.7", env["ip"], "the pod's address, for the status MAC")
}
