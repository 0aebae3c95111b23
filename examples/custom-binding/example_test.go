package tapbinding_test

import (
	"context"
	"fmt"
	"os"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	tapbinding "github.com/virtnet/virtnet/examples/custom-binding"
	"github.com/virtnet/virtnet/netdriver/netdrivertest"
	"github.com/virtnet/virtnet/phase1"
	"github.com/virtnet/virtnet/phase2"
)

// Example registers the binding next to virtnet's own and runs both
// phases on a simulated pod (a real agent passes the pod's netns path and
// no Driver).
func Example() {
	vmi, err := api.Load([]byte(`
kind: VirtualMachineInstance
metadata: {name: vm1, namespace: default, uid: 6a1f3a0e-2d4c-4b8e-9f35-0c1d2e3f4a5b}
spec:
  domain: {devices: {interfaces: [{name: default, binding: {name: example-tap}}]}}
  networks: [{name: default, pod: {}}]
`))
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "tapbinding-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := cache.New(dir)
	if err != nil {
		panic(err)
	}
	reg := registry.Default()
	reg[tapbinding.Name] = tapbinding.Binding{}

	pod := netdrivertest.SimulatedPod(netdrivertest.SimLink{Name: "eth0"})
	if err := phase1.Run(context.Background(), vmi, "", store, phase1.Options{Driver: pod, Registry: reg}); err != nil {
		panic(err)
	}
	items, err := phase2.ReadRecords(context.Background(), vmi, store, phase2.Options{Registry: reg})
	if err != nil {
		panic(err)
	}
	dom, err := phase2.Domain(context.Background(), vmi, store, phase2.Options{Registry: reg})
	if err != nil {
		panic(err)
	}
	nic := dom.Devices.Interfaces[0]
	fmt.Println(len(items), "interface:", nic.Alias.Name, "on", nic.Target.Dev, "managed="+nic.Target.Managed, "mtu", nic.MTU.Size)
	// Output:
	// 1 interface: ua-default on tap0 managed=no mtu 1440
}
