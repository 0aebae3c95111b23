package phase2_test

import (
	"context"
	"fmt"
	"os"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/phase2"
)

// ReadRecords reads the record phase1 wrote for each interface; Render has
// its binding add the device to a domain (here an empty one; a KubeVirt 1.x
// hook sidecar's comes from KubeVirt). A launcher gets both, and the DHCP
// servers, from prestart.Hook.
func ExampleRender() {
	vmi, err := api.Load([]byte(`
kind: VirtualMachineInstance
metadata: {name: vm1, namespace: default, uid: 6a1f3a0e-2d4c-4b8e-9f35-0c1d2e3f4a5b}
spec:
  domain:
    devices:
      interfaces: [{name: default, bridge: {}}]
  networks: [{name: default, pod: {}}]
`))
	if err != nil {
		panic(err)
	}
	dir, err := os.MkdirTemp("", "phase2-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := cache.New(dir)
	if err != nil {
		panic(err)
	}
	// What phase1 records for the bridge binding on eth0, and that it
	// finished preparing it.
	recs, err := store.OpenVMI(context.Background(), vmi.Metadata.UID)
	if err != nil {
		panic(err)
	}
	_, err = recs.PutInterface(&cache.Interface{
		Interface: "default", PodInterface: "eth0", Binding: "bridge",
		Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic", MAC: cache.MustParseMAC("8e:61:55:c2:4a:bd"), MTU: 1440,
	})
	if err != nil {
		panic(err)
	}
	_, err = recs.PutProgress(&cache.Progress{
		Interface: "default", PodInterface: "eth0", Binding: "bridge", State: cache.Finished,
	})
	if err != nil {
		panic(err)
	}
	if err := recs.Sync(); err != nil {
		panic(err)
	}
	if err := recs.Close(); err != nil {
		panic(err)
	}

	dom := &libvirtxml.Domain{}
	items, err := phase2.ReadRecords(context.Background(), vmi, store, phase2.Options{})
	if err != nil {
		panic(err)
	}
	if err := phase2.Render(vmi, items, dom, binding.RenderOptions{}); err != nil {
		panic(err)
	}
	out, err := dom.Devices.Interfaces[0].Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <interface type="bridge">
	//   <mac address="8e:61:55:c2:4a:bd"></mac>
	//   <source bridge="k6t-eth0"></source>
	//   <model type="virtio-non-transitional"></model>
	//   <mtu size="1440"></mtu>
	//   <rom enabled="no"></rom>
	//   <alias name="ua-default"></alias>
	// </interface>
}
