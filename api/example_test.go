package api_test

import (
	"fmt"

	"github.com/virtnet/virtnet/api"
)

// Load decodes a KubeVirt manifest (here a VirtualMachine), applies
// KubeVirt's defaults and validates it; Pairs matches each network to its
// interface and pod interface.
func ExampleLoad() {
	vmi, err := api.Load([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
  namespace: shop
spec:
  running: true
  template:
    spec:
      domain:
        devices:
          interfaces:
          - name: default
            masquerade: {}
            ports:
            - port: 80
          - name: backend
            bridge: {}
      networks:
      - name: default
        pod: {}
      - name: backend
        multus:
          networkName: backend-net
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pairs, err := api.Pairs(vmi)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range pairs {
		fmt.Printf("%s: %s on %s, model %s\n", p.Interface.Name, p.Binding(), p.PodInterface, p.Interface.Model)
	}
	fmt.Println(vmi.Spec.Domain.Devices.Interfaces[0].Ports[0].Protocol)
	// Output:
	// default: masquerade on eth0, model virtio
	// backend: bridge on net1, model virtio
	// TCP
}

// Load reports every invalid field at once, with its path.
func ExampleLoad_invalid() {
	_, err := api.Load([]byte(`
kind: VirtualMachineInstance
metadata: {name: vm1}
spec:
  domain:
    devices:
      interfaces:
      - {name: default, bridge: {}, macAddress: "01:00:5e:00:00:01"}
  networks:
  - {name: default, pod: {}}
  - {name: other, multus: {networkName: x}}
`))
	for _, fe := range api.FieldErrors(err) {
		fmt.Println(fe.Path)
	}
	// Output:
	// spec.domain.devices.interfaces[0].macAddress
	// spec.networks[1].name
}
