package api_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/virtnet/virtnet/api"
)

// TestTopology: with no topology set, sockets come from limits.cpu, else
// requests.cpu, rounded up (KubeVirt's mutating webhook); the NIC queues
// follow the vCPU count with multiqueue.
func TestTopology(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cpu      *api.CPU
		req, lim string
		want     api.CPUTopology
	}{
		{name: "nothing", want: api.CPUTopology{Sockets: 1, Cores: 1, Threads: 1}},
		{name: "requests", req: "4", want: api.CPUTopology{Sockets: 4, Cores: 1, Threads: 1}},
		{name: "limits win", req: "2", lim: "3", want: api.CPUTopology{Sockets: 3, Cores: 1, Threads: 1}},
		{name: "millis round up", req: "1500m", want: api.CPUTopology{Sockets: 2, Cores: 1, Threads: 1}},
		{name: "under one CPU", req: "250m", want: api.CPUTopology{Sockets: 1, Cores: 1, Threads: 1}},
		{name: "topology wins", cpu: &api.CPU{Cores: 2}, req: "8", want: api.CPUTopology{Sockets: 1, Cores: 2, Threads: 1}},
		{name: "model only", cpu: &api.CPU{Model: "host-passthrough"}, req: "6", want: api.CPUTopology{Sockets: 6, Cores: 1, Threads: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &api.VMI{}
			vmi.Spec.Domain.CPU = tc.cpu
			vmi.Spec.Domain.Resources.Requests = map[string]string{}
			vmi.Spec.Domain.Resources.Limits = map[string]string{}
			if tc.req != "" {
				vmi.Spec.Domain.Resources.Requests["cpu"] = tc.req
			}
			if tc.lim != "" {
				vmi.Spec.Domain.Resources.Limits["cpu"] = tc.lim
			}
			require.Equal(t, tc.want, vmi.Topology())
			n := tc.want.Sockets * tc.want.Cores * tc.want.Threads
			require.Equal(t, n, vmi.VCPUs())
			require.Zero(t, vmi.Queues(), "single queue without multiqueue")
			vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue = new(bool)
			*vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue = true
			require.Equal(t, int(n), vmi.Queues())
		})
	}
}

func TestCPUQuantityErrors(t *testing.T) {
	for _, q := range []string{"", "-1", "two", "1Gi0", "m", "0x10"} {
		_, err := api.ParseCPUQuantity(q)
		require.Error(t, err, q)
	}
	vmi, err := api.Decode([]byte("kind: VirtualMachineInstance\nmetadata: {name: a}\nspec: {domain: {resources: {requests: {cpu: lots}}, devices: {}}}\n"))
	require.NoError(t, err)
	api.SetDefaults(vmi)
	require.ErrorContains(t, api.Validate(vmi), "spec.domain.resources.requests.cpu")
}

// TestVMFirmwareUUID: a VirtualMachine's VMI gets KubeVirt's stable
// firmware UUID, uuid5 of KubeVirt's namespace and the VM's name: the same
// on every start (whatever the uid) and unless the template sets one.
func TestVMFirmwareUUID(t *testing.T) {
	vm := func(uid, fw string) string {
		return "kind: VirtualMachine\nmetadata: {name: web, namespace: ns1, uid: " + uid + "}\n" +
			"spec:\n  template:\n    spec:\n      domain:\n        devices: {}\n" + fw
	}
	a, err := api.Decode([]byte(vm("u1", "")))
	require.NoError(t, err)
	b, err := api.Decode([]byte(vm("u2", "")))
	require.NoError(t, err)
	want := uuid.NewSHA1(uuid.MustParse("6a1a24a1-4061-4607-8bf4-a3963d0c5895"), []byte("web")).String()
	require.Equal(t, want, a.Spec.Domain.Firmware.UUID)
	require.Equal(t, want, b.Spec.Domain.Firmware.UUID, "not stable across restarts")
	c, err := api.Decode([]byte(vm("u1", "        firmware: {uuid: 5d307ca9-b3ef-428c-8861-06e72d69f223}\n")))
	require.NoError(t, err)
	require.Equal(t, "5d307ca9-b3ef-428c-8861-06e72d69f223", c.Spec.Domain.Firmware.UUID)
	vmi, err := api.Decode([]byte("kind: VirtualMachineInstance\nmetadata: {name: web}\nspec: {domain: {devices: {}}}\n"))
	require.NoError(t, err)
	require.Nil(t, vmi.Spec.Domain.Firmware, "a standalone VMI gets no VM UUID")
}

// TestDiskDefaults: KubeVirt's disk defaults: no target is a disk, no bus
// is SATA (sda in the guest), a cdrom's tray is closed.
func TestDiskDefaults(t *testing.T) {
	vmi, err := api.Decode([]byte(`
kind: VirtualMachineInstance
metadata: {name: a}
spec:
  domain:
    devices:
      disks: [{name: a}, {name: b, disk: {}}, {name: c, cdrom: {}}, {name: d, lun: {}}, {name: e, disk: {bus: virtio}}]
`))
	require.NoError(t, err)
	api.SetDefaults(vmi)
	d := vmi.Spec.Domain.Devices.Disks
	require.Equal(t, "sata", d[0].Disk.Bus)
	require.Equal(t, "sata", d[1].Disk.Bus)
	require.Equal(t, "sata", d[2].CDRom.Bus)
	require.Equal(t, "closed", d[2].CDRom.Tray)
	require.Equal(t, "sata", d[3].LUN.Bus)
	require.Equal(t, "virtio", d[4].Disk.Bus)
}
