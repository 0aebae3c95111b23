package tapbinding_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestKernel: on a pod the CNI bridge plugin made (flannel's shape, MTU
// 1450), phase1 with the example registered creates tap0 in the pod's
// namespace (the VM's owner, the pod's MTU, up, marked); a second run
// changes nothing (same ifindex); phase2's domain passes
// virt-xml-validate; Cleanup removes the tap and leaves eth0 as the CNI
// left it.
func TestKernel(t *testing.T) {
	pod := testutil.NewFlannelPod(t)
	vmi := testutil.LoadVMI(t, vmiYAML)
	vmi.Metadata.Annotations = map[string]string{api.NonRootAnnotation: ""} // taps owned by 107
	store := testutil.NewStore(t)
	ctx := context.Background()
	opts := phase1.Options{Registry: reg()}
	eth0Before, err := pod.Pod.Handle.LinkByName("eth0")
	require.NoError(t, err)

	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, opts))
	l, err := pod.Pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	tap, ok := l.(*netlink.Tuntap)
	require.True(t, ok, "tap0 is a %s", l.Type())
	require.Equal(t, netlink.TUNTAP_MODE_TAP, tap.Mode)
	require.Equal(t, uint32(107), tap.Owner)
	require.Equal(t, 1450, tap.Attrs().MTU)
	require.NotZero(t, tap.Attrs().Flags&(1<<0), "tap0 is up") // net.FlagUp
	require.Contains(t, tap.Attrs().AltNames, binding.Mark(netdriver.TypeTuntap, vmi.Metadata.UID, "default"))

	require.NoError(t, phase1.Run(ctx, vmi, pod.Pod.Path, store, opts))
	again, err := pod.Pod.Handle.LinkByName("tap0")
	require.NoError(t, err)
	require.Equal(t, tap.Attrs().Index, again.Attrs().Index, "a second run leaves the tap alone")

	dom, err := phase2.Domain(ctx, vmi, store, phase2.Options{Registry: reg()})
	require.NoError(t, err)
	xml, err := dom.Marshal()
	require.NoError(t, err)
	testutil.ValidateDomainXML(t, xml)

	require.NoError(t, phase1.Cleanup(ctx, vmi, pod.Pod.Path, store, opts))
	_, err = pod.Pod.Handle.LinkByName("tap0")
	require.ErrorAs(t, err, new(netlink.LinkNotFoundError))
	eth0After, err := pod.Pod.Handle.LinkByName("eth0")
	require.NoError(t, err)
	require.Equal(t, eth0Before.Attrs().Index, eth0After.Attrs().Index)
	require.Equal(t, eth0Before.Attrs().MTU, eth0After.Attrs().MTU)
}
