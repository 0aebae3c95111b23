package cniconfig_test

import (
	"fmt"

	"github.com/virtnet/virtnet/macvtap/cniconfig"
)

func ExampleParse() {
	c, err := cniconfig.Parse([]byte(`{"cniVersion":"0.3.1","name":"p4p1","type":"macvtap",
		"mtu":1500,"promiscMode":true,"deviceID":"p4p1Mvp0"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Name, c.DeviceID, c.MTU, c.PromiscMode)
	_, err = cniconfig.Parse([]byte(`{"cniVersion":"0.3.1","name":"p4p1","type":"macvtap","deviceID":"d","mac":"01:00:5e:00:00:01"}`))
	fmt.Println(err)
	// Output:
	// p4p1 p4p1Mvp0 1500 true
	// macvtap config: mac "01:00:5e:00:00:01": multicast MAC address
}
