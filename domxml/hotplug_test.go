package domxml_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/testrig/testutil"
)

// hotplugVMI is a q35 VMI with memory mem, n masquerade/bridge
// interfaces and the annotations given (a YAML map's entries).
func hotplugVMI(mem string, n int, annotations string) string {
	ifaces, nets := "", ""
	for i := range n {
		name := []string{"default", "blue", "red", "green", "black"}[i]
		if i == 0 {
			ifaces += "      - {name: default, masquerade: {}}\n"
			nets += "  - {name: default, pod: {}}\n"
			continue
		}
		ifaces += "      - {name: " + name + ", bridge: {}}\n"
		nets += "  - {name: " + name + ", multus: {networkName: " + name + "-net}}\n"
	}
	y := `
kind: VirtualMachineInstance
metadata: {name: hp, namespace: default, uid: 4d2c1b0a-9e8f-4a7b-8c6d-5e4f3a2b1c23, annotations: {` + annotations + `}}
spec:
  domain:
    machine: {type: q35}
    resources: {requests: {memory: ` + mem + `}}
    devices:
      disks: [{name: root, disk: {bus: virtio}}]
`
	if n > 0 {
		y += "      interfaces:\n" + ifaces + "  networks:\n" + nets
	}
	return y + "  volumes: [{name: root, containerDisk: {image: quay.io/containerdisks/alpine}}]\n"
}

// interfaces is a Build hook adding n bridge interfaces without PCI
// address, as phase2's render does.
func interfaces(n int) func(dom *libvirtxml.Domain) error {
	return func(dom *libvirtxml.Domain) error {
		for i := range n {
			dom.Devices.Interfaces = append(dom.Devices.Interfaces, libvirtxml.DomainInterface{
				Source: &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: "br" + string(rune('0'+i))}},
				Model:  &libvirtxml.DomainInterfaceModel{Type: "virtio-non-transitional"},
			})
		}
		return nil
	}
}

// TestKubeVirtHotplugPorts is KubeVirt v1.9.0's count of spare root ports
// (allocateHotplugPorts: its v1 placeholders topped up to its v2 count),
// on domains with a virtio disk and n interfaces. KubeVirt counts as PCI
// devices, besides the interfaces, the disk, the USB controller (model
// none), the SCSI and virtio-serial controllers and the memory balloon:
// 5 + n. So: no interface, max(8-5, 3) = 3; one, 3 placeholders (4-1)
// and v2's max(8-6, 3) = 3 already met; two, 2 placeholders topped up to
// 3; a 3 GiB guest with one, 3 placeholders topped up to max(16-6, 6) =
// 10; the slot count 10 with two, 8 placeholders; on the root complex, 0.
func TestKubeVirtHotplugPorts(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mem         string
		ifaces      int
		annotations string
		want        int
	}{
		{name: "no interface", mem: "128Mi", ifaces: 0, want: 3},
		{name: "one interface: 3 placeholders", mem: "128Mi", ifaces: 1, want: 3},
		{name: "two interfaces", mem: "128Mi", ifaces: 2, want: 3},
		{name: "large guest", mem: "3Gi", ifaces: 1, want: 10},
		{name: "slot count 10", mem: "128Mi", ifaces: 2, annotations: "kubevirt.io/pci-interface-slot-count: '10'", want: 8},
		{name: "root complex", mem: "3Gi", ifaces: 2, annotations: "kubevirt.io/placePCIDevicesOnRootComplex: 'true'", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, hotplugVMI(tc.mem, tc.ifaces, tc.annotations))
			dom, err := domxml.Build(vmi, domxml.Options{Interfaces: interfaces(tc.ifaces)})
			require.NoError(t, err)
			got, err := domxml.KubeVirtHotplugPorts(vmi, dom)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestHotplugPortsGolden: Options.HotplugPorts reserves spare root ports
// beyond the devices' (KubeVirt's count, or a number), none above index
// 31; SpareRootPorts reads the count back; the domain is a golden that
// virt-xml-validate and libvirt's test driver accept. Built without its
// interfaces and completed later (prestart's network step), the domain
// ends with the same spares once ReserveHotplugPorts runs again.
func TestHotplugPortsGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports int
		mem   string
		want  int
	}{
		{"kubevirt-large", domxml.HotplugPortsKubeVirt, "3Gi", 9},
		{"kubevirt-small", domxml.HotplugPortsKubeVirt, "128Mi", 3},
		{"five", 5, "128Mi", 5},
		{"none", domxml.HotplugPortsNone, "128Mi", 0},
		{"capped", 40, "128Mi", 31 - 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := testutil.LoadVMI(t, hotplugVMI(tc.mem, 2, ""))
			dom, err := domxml.Build(vmi, domxml.Options{Interfaces: interfaces(2), HotplugPorts: tc.ports})
			require.NoError(t, err)
			require.Equal(t, tc.want, domxml.SpareRootPorts(dom))
			testutil.CheckDomain(t, dom, filepath.Join("testdata", "TestHotplugPorts", tc.name+".xml"))

			later, err := domxml.Build(vmi, domxml.Options{HotplugPorts: tc.ports})
			require.NoError(t, err)
			require.NoError(t, interfaces(2)(later))
			require.NoError(t, domxml.ReserveHotplugPorts(vmi, later, tc.ports))
			require.Equal(t, tc.want, domxml.SpareRootPorts(later), "completed later")
		})
	}
	t.Run("default", func(t *testing.T) {
		// The zero Options reserve KubeVirt 1.x's count: a q35 VM built
		// with the defaults can take hot-plugged interfaces.
		vmi := testutil.LoadVMI(t, hotplugVMI("128Mi", 2, ""))
		dom, err := domxml.Build(vmi, domxml.Options{Interfaces: interfaces(2)})
		require.NoError(t, err)
		require.Equal(t, 3, domxml.SpareRootPorts(dom))
	})
	t.Run("bad", func(t *testing.T) {
		vmi := testutil.LoadVMI(t, hotplugVMI("128Mi", 1, ""))
		_, err := domxml.Build(vmi, domxml.Options{HotplugPorts: domxml.HotplugPortsNone - 1})
		require.ErrorContains(t, err, "Options.HotplugPorts")
		vmi = testutil.LoadVMI(t, hotplugVMI("128Mi", 1, "kubevirt.io/pci-interface-slot-count: many"))
		_, err = domxml.Build(vmi, domxml.Options{HotplugPorts: domxml.HotplugPortsKubeVirt})
		require.ErrorContains(t, err, "metadata.annotations[kubevirt.io/pci-interface-slot-count]")
		require.ErrorContains(t, err, "many")
	})
}
