package prestart_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/domxml"
	"github.com/virtnet/virtnet/phase2/prestart"
)

// A launcher's one call: the hook builds the domain from its directories,
// renders the interfaces from phase1's records and starts the DHCP
// servers their bindings ask for (none here: the pod interface has no
// IPAM), then the launcher defines Running.Domain.
func ExampleHook_Run() {
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
	dir, err := os.MkdirTemp("", "prestart-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := cache.New(filepath.Join(dir, "cache"))
	if err != nil {
		panic(err)
	}
	// What phase1, in the privileged agent, recorded for the bridge
	// binding on eth0 (here by hand).
	recs, err := store.OpenVMI(context.Background(), vmi.Metadata.UID)
	if err != nil {
		panic(err)
	}
	_, err = recs.PutInterface(&cache.Interface{
		Interface: "default", PodInterface: "eth0", Binding: "bridge",
		Bridge: "k6t-eth0", Tap: "tap0", NIC: "eth0-nic", MAC: cache.MustParseMAC("8e:61:55:c2:4a:bd"), MTU: 1440, IPAMDisabled: true,
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

	// The context lives as long as the VM: the DHCP servers stop with it.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	hook := &prestart.Hook{
		VMI: vmi, Store: store,
		Dirs:          domxml.Options{PrivateDir: filepath.Join(dir, "private"), EphemeralDir: filepath.Join(dir, "ephemeral")},
		InterfaceType: "ethernet", // phase1's tap; "" chooses from this process's capabilities
		ResolvConf:    filepath.Join(dir, "resolv.conf"),
	}
	running, err := hook.Run(ctx)
	if err != nil {
		panic(err)
	}
	defer running.Stop()
	nic, err := running.Domain().Devices.Interfaces[0].Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(nic)
	fmt.Println("DHCP servers:", len(running.Servers()))
	// Output:
	// <interface type="ethernet">
	//   <mac address="8e:61:55:c2:4a:bd"></mac>
	//   <target dev="tap0" managed="no"></target>
	//   <model type="virtio-non-transitional"></model>
	//   <mtu size="1440"></mtu>
	//   <rom enabled="no"></rom>
	//   <alias name="ua-default"></alias>
	// </interface>
	// DHCP servers: 0
}
