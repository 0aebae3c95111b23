package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestRunNetns runs the real phase1 (masquerade: bridge, tap, nftables) in
// a throwaway pod namespace, then renders from the cache it wrote.
func TestRunNetns(t *testing.T) {
	testutil.RequireRoot(t)
	pod := testutil.NewPod(t)
	vmi := writeVMI(t, `
kind: VirtualMachineInstance
metadata: {name: web, namespace: shop, uid: 22222222-3333-4444-8555-666666666666}
spec:
  domain:
    devices:
      interfaces: [{name: default, masquerade: {}, ports: [{port: 8080}]}]
  networks: [{name: default, pod: {}}]
`)
	cacheDir := t.TempDir()
	out, errOut, code := runMain(t, "-vmi", vmi, "-netns", pod.Pod.Name, "-cache", cacheDir, "-interface-type", "ethernet")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `<target dev="tap0" managed="no">`)
	require.Contains(t, out, `<mtu size="1440">`)
	validateXML(t, out)

	// The records stay in -cache: render again without phase1.
	plan, errOut, code := runMain(t, "-vmi", vmi, "-cache", cacheDir, "-plan")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, plan, "DNAT TCP 8080 → 10.0.2.2")
	require.Contains(t, plan, pod.PodIP.String()+"/24")
}
