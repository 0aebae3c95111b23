//go:build ignore

// Command virtnet-kvprobe1x is a dev-time tool, built inside a scratch copy
// of KubeVirt v1.9.0 by scripts/kvprobe1x.sh (never committed there): it runs
// KubeVirt's own functions on virtnet's inputs and prints their results as
// JSON test data.
//
//	-mode names   pod interface, bridge, NIC and tap names of a list of
//	              networks (pkg/network/namescheme, pkg/network/link)
//	-mode status  status.interfaces computed by virt-handler's NetStat
//	              (pkg/network/setup UpdateStatus) for each case directory
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/network/link"
	"kubevirt.io/kubevirt/pkg/network/namescheme"
)

// namesCase is one network of the names list.
type namesCase struct {
	// Network is the network's name; Kind is "pod", "multus" or
	// "multus-default".
	Network string `json:"network"`
	Kind    string `json:"kind"`
	// StatusPodInterfaceName is status.interfaces[].podInterfaceName as
	// virt-controller reported it (a primary user-defined network's pod
	// interface, e.g. "ovn-udn1"); empty for none.
	StatusPodInterfaceName string `json:"statusPodInterfaceName,omitempty"`
	// What KubeVirt derives.
	PodInterface        string `json:"podInterface"`
	PodInterfaceOrdinal string `json:"podInterfaceOrdinal"`
	Bridge              string `json:"bridge"`
	NIC                 string `json:"nic"`
	Tap                 string `json:"tap"`
	// The same from the ordinal pod interface name (net1, net2, …).
	BridgeOrdinal string `json:"bridgeOrdinal"`
	NICOrdinal    string `json:"nicOrdinal"`
	TapOrdinal    string `json:"tapOrdinal"`
}

func namesInput() []namesCase {
	cs := []namesCase{
		{Network: "default", Kind: "pod"},
		{Network: "podnet", Kind: "pod"},
		{Network: "udn", Kind: "pod", StatusPodInterfaceName: "ovn-udn1"},
		{Network: "mdefault", Kind: "multus-default"},
		{Network: "mdefault-udn", Kind: "multus-default", StatusPodInterfaceName: "ovn-udn1"},
	}
	for _, n := range []string{"blue", "red", "green", "net1", "a", "pod", "secondary", "my-net.2",
		"abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0"} {
		cs = append(cs, namesCase{Network: n, Kind: "multus"})
	}
	return cs
}

func network(c namesCase) v1.Network {
	n := v1.Network{Name: c.Network}
	switch c.Kind {
	case "pod":
		n.Pod = &v1.PodNetwork{}
	case "multus":
		n.Multus = &v1.MultusNetwork{NetworkName: "nad-" + c.Network}
	case "multus-default":
		n.Multus = &v1.MultusNetwork{NetworkName: "nad-" + c.Network, Default: true}
	}
	return n
}

func names() error {
	cs := namesInput()
	var nets []v1.Network
	for _, c := range cs {
		if c.Kind == "multus" {
			nets = append(nets, network(c))
		}
	}
	ordinal := namescheme.CreateOrdinalNetworkNameScheme(nets)
	for i := range cs {
		c := &cs[i]
		n := network(*c)
		var st []v1.VirtualMachineInstanceNetworkInterface
		if c.StatusPodInterfaceName != "" {
			st = append(st, v1.VirtualMachineInstanceNetworkInterface{Name: c.Network, PodInterfaceName: c.StatusPodInterfaceName})
		}
		c.PodInterface = namescheme.HashedPodInterfaceName(n, st)
		c.PodInterfaceOrdinal = ordinal[c.Network]
		if c.PodInterfaceOrdinal == "" {
			c.PodInterfaceOrdinal = namescheme.PrimaryPodInterfaceName
		}
		c.Bridge = link.GenerateBridgeName(c.PodInterface)
		c.NIC = link.GenerateNewBridgedVmiInterfaceName(c.PodInterface)
		c.Tap = link.GenerateTapDeviceName(c.PodInterface, n)
		c.BridgeOrdinal = link.GenerateBridgeName(c.PodInterfaceOrdinal)
		c.NICOrdinal = link.GenerateNewBridgedVmiInterfaceName(c.PodInterfaceOrdinal)
		c.TapOrdinal = link.GenerateTapDeviceName(c.PodInterfaceOrdinal, n)
	}
	return emit(cs)
}

func emit(v any) error {
	e := json.NewEncoder(os.Stdout)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func main() {
	mode := flag.String("mode", "", "names or status")
	dir := flag.String("dir", "", "status: the directory of the cases")
	flag.Parse()
	var err error
	switch *mode {
	case "names":
		err = names()
	case "status":
		err = status(*dir)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kvprobe1x:", err)
		os.Exit(1)
	}
}

func status(string) error { return fmt.Errorf("not yet") }
