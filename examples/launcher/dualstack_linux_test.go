package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestLaunchDualStackBeforeQEMU runs the launcher (-once) on a dual-stack
// masquerade pod. Nothing opens tap0, as before libvirt starts QEMU, so the
// bridge has no carrier and no link-local address: the preStartHook must
// still start DHCP and return (router advertisements start later, when
// the address appears), not fail waiting for that address.
func TestLaunchDualStackBeforeQEMU(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{IPv6: "fd00:10:244:1::7/64", GatewayV6: "fd00:10:244:1::1"})
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))
	args := []string{"-vmi", vmi, "-netns", pod.Pod.Name, "-dir", filepath.Join(dir, "work"),
		"-o", filepath.Join(dir, "domain.xml"), "-resolv", filepath.Join(dir, "none"), "-cleanup", "-once"}
	var out, errb syncBuffer
	require.Equal(t, 0, run(context.Background(), args, &out, &errb), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	t.Logf("launcher -once:\n%s\n%s", out.String(), errb.String())
	require.Contains(t, out.String()+errb.String(), "DHCP server for interface default on k6t-eth0")
	require.NotContains(t, out.String()+errb.String(), "router advertisements:")
}

// TestLaunchIPv6Only: on a single-stack IPv6 masquerade pod the launcher
// starts DHCPv6 (no DHCPv4) and says which address it serves.
func TestLaunchIPv6Only(t *testing.T) {
	pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true, IPv6: "fd00:10:244:1::7/64", GatewayV6: "fd00:10:244:1::1"})
	dir := t.TempDir()
	vmi := filepath.Join(dir, "vmi.yaml")
	require.NoError(t, os.WriteFile(vmi, []byte(masqueradeVMI), 0o644))
	args := []string{"-vmi", vmi, "-netns", pod.Pod.Name, "-dir", filepath.Join(dir, "work"),
		"-o", filepath.Join(dir, "domain.xml"), "-resolv", filepath.Join(dir, "none"), "-cleanup", "-once"}
	var out, errb syncBuffer
	require.Equal(t, 0, run(context.Background(), args, &out, &errb), "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	t.Logf("launcher -once:\n%s\n%s", out.String(), errb.String())
	require.Contains(t, out.String()+errb.String(), "DHCP server for interface default on k6t-eth0: fd10:0:2::2/120")
	require.NotContains(t, out.String()+errb.String(), "invalid Prefix")
}
