package phase1_test

import (
	"context"
	"strings"
	"testing"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// TestTapOwner: the taps of a root VMI (v0.53's default) are root's, so
// that a root libvirt without CAP_NET_ADMIN can open them; those of a
// non-root VMI (annotation kubevirt.io/nonroot, any value, or
// status.runtimeUser not 0) are the qemu user's; Options.TapOwner
// overrides both. Real namespaces (the bridge binding without IPAM needs
// no dummy); the owner is read back from the kernel.
func TestTapOwner(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*api.VMI)
		override phase1.TapOwner
		want     uint32
	}{
		{name: "root VMI", want: 0},
		{name: "nonroot annotation", mutate: func(v *api.VMI) { v.Metadata.Annotations = map[string]string{api.NonRootAnnotation: ""} }, want: 107},
		{name: "status.runtimeUser", mutate: func(v *api.VMI) { v.Status.RuntimeUser = 107 }, want: 107},
		{name: "override", override: phase1.TapOwnerUID(1000), want: 1000},
		{name: "override to root on a non-root VMI", mutate: func(v *api.VMI) { v.Status.RuntimeUser = 107 }, override: phase1.TapOwnerUID(0), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testutil.NewPodWith(t, testutil.PodConfig{NoIPAM: true})
			vmi := testutil.LoadVMI(t, bridgeVMI)
			if tc.mutate != nil {
				tc.mutate(vmi)
			}
			require.NoError(t, phase1.Run(context.Background(), vmi, pod.Pod.Path, testutil.NewStore(t), phase1.Options{TapOwner: tc.override}))
			tap, err := pod.Pod.Handle.LinkByName("tap0")
			require.NoError(t, err)
			tt, ok := tap.(*netlink.Tuntap)
			require.True(t, ok, "tap0 is a %T", tap)
			require.Equal(t, tc.want, tt.Owner, "owner")
			require.Equal(t, tc.want, tt.Group, "group")
		})
	}
}

const passtVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-passt, namespace: default, uid: ` + uid + `}
spec:
  domain:
    devices:
      interfaces: [{name: default, passt: {}}]
  networks: [{name: default, pod: {}}]
`

// TestPasstPingGroupFollowsVMI: passt runs as the VMI's user, so the
// group allowed ICMP echo sockets is root's for a root VMI and the qemu
// user's for a non-root one.
func TestPasstPingGroupFollowsVMI(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nonRoot bool
		want    string
	}{{"root VMI", false, "0 0"}, {"non-root VMI", true, "107 107"}} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, passtVMI)
			if tc.nonRoot {
				vmi.Status.RuntimeUser = 107
			}
			f := netdrivertest.NewFake()
			require.NoError(t, phase1.Run(context.Background(), vmi, "", testutil.NewStore(t), phase1.Options{Driver: f}))
			got, err := f.Sysctl("ipv4/ping_group_range")
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestNonRootFromManifest: the annotation and status.runtimeUser are read
// from the manifest.
func TestNonRootFromManifest(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        int
	}{
		{"plain", "", 0},
		{"annotation", "", 107},
		{"runtimeUser", "\nstatus: {runtimeUser: 107}", 107},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := bridgeVMI + tc.extra
			if tc.name == "annotation" {
				// One metadata: a second would be a duplicate field.
				manifest = strings.Replace(manifest, "uid: "+uid+"}", "uid: "+uid+`, annotations: {kubevirt.io/nonroot: "true"}}`, 1)
			}
			vmi := testutil.LoadVMI(t, manifest)
			require.Equal(t, tc.want, phase1.TapOwnerFor(vmi))
		})
	}
}
