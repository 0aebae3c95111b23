package phase1_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestMigrationTargetMasquerade runs masquerade phase1 in a source pod
// and, as a migration target, in a second pod of the same CNI network
// (another pod IP): from the guest's side nothing changes (its MAC,
// 10.0.2.2, the gateway 10.0.2.1 and the gateway's MAC on k6t-eth0), the
// pod IPs recorded are each pod's own, and the node reaches a VM stand-in
// in the target pod through the target's pod IP on the declared port.
func TestMigrationTargetMasquerade(t *testing.T) {
	node := testutil.NewNS(t, "vn-node")
	network := testutil.NewCNINetwork(t, node, testutil.FlannelSpec)
	podA, podB := network.AddPod(t), network.AddPod(t)
	require.NotEqual(t, podA.PodIP.String(), podB.PodIP.String())
	vmi := testutil.LoadVMI(t, masqueradeVMI)
	sA, sB := testutil.NewStore(t), testutil.NewStore(t)
	require.NoError(t, phase1.Run(context.Background(), vmi, podA.Pod.Path, sA, phase1.Options{}))
	recA, err := sA.ReadInterface(uid, "default")
	require.NoError(t, err)

	// The target's VMI carries the source's status.
	target := testutil.LoadVMI(t, masqueradeVMI)
	target.Status.Interfaces = []api.InterfaceStatus{{Name: "default", MAC: recA.MAC.String(), IP: "10.0.2.2", InfoSource: "domain"}}
	start := time.Now()
	require.NoError(t, phase1.Run(context.Background(), target, podB.Pod.Path, sB, phase1.Options{MigrationTarget: true}))
	t.Logf("phase1 in the target pod: %v", time.Since(start))
	recB, err := sB.ReadInterface(uid, "default")
	require.NoError(t, err)
	for _, f := range []struct {
		name string
		a, b any
	}{
		{"MAC", recA.MAC, recB.MAC}, {"IPv4", recA.IPv4, recB.IPv4}, {"gateway", recA.Gateway, recB.Gateway},
		{"bridge", recA.Bridge, recB.Bridge}, {"tap", recA.Tap, recB.Tap},
	} {
		require.Equal(t, f.a, f.b, "%s must not change across the migration", f.name)
	}
	require.Equal(t, netip.MustParsePrefix("10.0.2.2/24"), recB.IPv4)
	require.Equal(t, netip.MustParseAddr("10.0.2.1"), recB.Gateway)
	for _, p := range []*testutil.Pod{podA, podB} {
		br, err := p.Pod.Handle.LinkByName(recB.Bridge)
		require.NoError(t, err)
		require.Equal(t, api.MasqueradeBridgeMAC, br.Attrs().HardwareAddr.String(), "the gateway's MAC is the same in both pods")
	}
	progA, err := sA.ReadProgress(uid, "default")
	require.NoError(t, err)
	progB, err := sB.ReadProgress(uid, "default")
	require.NoError(t, err)
	require.Equal(t, []string{podA.PodIP.String()}, addrTexts(progA.PodIPs))
	require.Equal(t, []string{podB.PodIP.String()}, addrTexts(progB.PodIPs))

	vm := vmNS(t, podB.Pod, recB.Bridge, recB.MAC, recB.IPv4, recB.Gateway)
	testutil.ServeSource(t, vm, "tcp4", "0.0.0.0:80")
	_, err = testutil.DialSource(node, "tcp4", podB.PodIP.String()+":80", 1)
	require.NoError(t, err, "the node reaches the VM through the target pod's IP")
}
