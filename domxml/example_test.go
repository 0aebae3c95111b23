package domxml_test

import (
	"fmt"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/domxml"
)

func ExampleBuild() {
	vmi, err := api.Load([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: cirros, namespace: demo, uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427}
spec:
  domain:
    cpu: {cores: 2}
    memory: {guest: 128Mi}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
      - {name: cloudinit, disk: {bus: virtio}}
  volumes:
  - {name: root, containerDisk: {image: quay.io/kubevirt/cirros-container-disk-demo}}
  - {name: cloudinit, cloudInitNoCloud: {userData: "#cloud-config"}}
`))
	if err != nil {
		panic(err)
	}
	dom, err := domxml.Build(vmi, domxml.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(dom.Name, dom.Memory.Value, dom.Memory.Unit, dom.VCPU.Value, dom.OS.Type.Machine)
	for _, d := range dom.Devices.Disks {
		fmt.Println(d.Target.Dev, d.Source.File.File)
	}
	// Output:
	// demo_cirros 134217728 b 2 q35
	// vda /var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2
	// vdb /var/run/kubevirt-ephemeral-disks/cloud-init-data/demo/cirros/noCloud.iso
}
