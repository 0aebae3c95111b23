package deviceplugin_test

import (
	"fmt"

	"github.com/virtnet/virtnet/macvtap/deviceplugin"
)

func ExampleParseConfig() {
	res, err := deviceplugin.ParseConfig([]byte(`[{"name":"dataplane","lowerDevice":"eth0","capacity":50},
		{"name":"p4p1","lowerDevice":"p4p1"}]`))
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println(r.ResourceName(), r.LowerDevice, r.Mode, r.Capacity)
	}
	_, err = deviceplugin.ParseConfig([]byte(`[{"name":"a","lowerDevice":"eth0","mode":"source"}]`))
	fmt.Println(err)
	// Output:
	// macvtap.network.kubevirt.io/dataplane eth0 bridge 50
	// macvtap.network.kubevirt.io/p4p1 p4p1 bridge 100
	// DP_MACVTAP_CONF[0].mode "source": unknown macvtap mode "source" (want one of bridge, vepa, private, passthru)
}

func ExampleInventory() {
	inv, err := deviceplugin.NewInventory([]deviceplugin.Resource{{Name: "eth0", LowerDevice: "eth0", Mode: "bridge", Capacity: 1}})
	if err != nil {
		panic(err)
	}
	slot, _ := inv.Acquire("eth0")
	fmt.Println(slot.DeviceID, len(slot.HostLink))
	_, err = inv.Acquire("eth0")
	fmt.Println(err)
	// Output:
	// eth0Mvp0 15
	// macvtap resource "eth0": no free device slot: all 1 in use
}
