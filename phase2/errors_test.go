package phase2_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/binding/sriov"
	"github.com/virtnet/virtnet/phase2"
	"github.com/virtnet/virtnet/testrig/testutil"
)

const sriovVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: vmi-sriov, namespace: default, uid: 3f0e8a52-7d1c-4b6a-9e2f-5c8d7b6a4e31}
spec:
  domain:
    devices:
      interfaces: [{name: s1, sriov: {}}]
  networks: [{name: s1, multus: {networkName: sriov/s1}}]
`

// TestErrorMessages: phase2 names the interface and the binding, the
// binding only its field and value, once each.
func TestErrorMessages(t *testing.T) {
	vmi := testutil.LoadVMI(t, sriovVMI)
	store := writeRecords(t, vmi.Metadata.UID)
	render := func(mut func(*api.VMI), env map[string]string) error {
		v := *vmi
		v.Spec.Domain.Devices.Interfaces = append([]api.Interface(nil), vmi.Spec.Domain.Devices.Interfaces...)
		if mut != nil {
			mut(&v)
		}
		return enrich(context.Background(), &v, store, &libvirtxml.Domain{}, binding.RenderOptions{Env: env})
	}
	for _, tc := range []struct {
		name string
		mut  func(*api.VMI)
		env  bool
		want string
	}{
		{name: "no device plugin variable",
			want: `phase2: interface "s1": sriov binding: KUBEVIRT_RESOURCE_NAME_s1="": not set`},
		{name: "bad guest PCI address", env: true,
			mut:  func(v *api.VMI) { v.Spec.Domain.Devices.Interfaces[0].PciAddress = "0000:00:20.0" },
			want: `phase2: interface "s1": sriov binding: pciAddress: invalid PCI address "0000:00:20.0": slot above 0x1f`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env map[string]string
			if tc.env {
				env = sriov.SimulatedEnv(vmi)
			}
			err := render(tc.mut, env)
			require.ErrorIs(t, err, phase2.ErrRender)
			require.EqualError(t, err, tc.want)
		})
	}

	// A missing record: phase2's own error, the path once.
	bridge := loadVMI(t, "bridge")
	empty := writeRecords(t, bridge.Metadata.UID)
	path, err := empty.InterfacePath(bridge.Metadata.UID, "bridge")
	require.NoError(t, err)
	err = enrich(context.Background(), bridge, empty, &libvirtxml.Domain{}, binding.RenderOptions{})
	require.EqualError(t, err, `phase2: interface "bridge": no cache record at `+path+` (has phase1 run?)`)
}
