package phase2_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/phase2"
)

// TestDHCPServersWithoutServing: what DHCPServers decide before any
// socket: a Watch needs Records; an interface whose record has no IPAM
// gets no server; once stopped, no server starts. The servers themselves
// are tested on a kernel: prestart's TestLivePlugDHCP (start and stop
// beside a running one), the sidecar's TestDHCPFollowsTheVMI (Sync) and
// TestDHCPRestartsAfterDelAdd (Watch).
func TestDHCPServersWithoutServing(t *testing.T) {
	ctx := context.Background()
	_, err := phase2.NewDHCPServers(ctx, phase2.DHCPOptions{Watch: time.Second})
	require.ErrorContains(t, err, "Watch needs Records")

	vmi := syncVMI(t, "-")
	noIPAM := blueRecord
	noIPAM.IPAMDisabled = true
	store := writeRecords(t, syncUID, masqRecord("default", "eth0", "02:1a:2b:3c:4d:5e"), noIPAM)
	items, err := phase2.ReadRecords(ctx, vmi, store, phase2.Options{})
	require.NoError(t, err)
	require.Equal(t, "blue", items[1].Pair.Interface.Name)

	s, err := phase2.NewDHCPServers(ctx, phase2.DHCPOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx, vmi, items[1]), "no IPAM: no server, no error")
	require.NoError(t, s.Stop("blue"), "no server to stop")
	require.Empty(t, s.Servers())
	require.NoError(t, s.StopAll())
	require.ErrorContains(t, s.Start(ctx, vmi, items[0]), `interface "default": the DHCP servers are stopped`)
	require.ErrorContains(t, s.Sync(ctx, vmi, items), "the DHCP servers are stopped")
	require.Empty(t, s.Servers())
	require.NoError(t, s.Wait())
}
