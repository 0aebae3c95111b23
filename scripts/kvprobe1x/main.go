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
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/network/cache"
	"kubevirt.io/kubevirt/pkg/network/link"
	"kubevirt.io/kubevirt/pkg/network/namescheme"
	netsetup "kubevirt.io/kubevirt/pkg/network/setup"
	kfs "kubevirt.io/kubevirt/pkg/os/fs"
	"kubevirt.io/kubevirt/pkg/util"
	"kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api"
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

// tmpCache is a KubeVirt cache creator rooted in a temporary directory.
type tmpCache struct{ dir string }

func (c tmpCache) New(p string) *cache.Cache {
	return cache.NewCustomCache(filepath.Join(c.dir, p), kfs.New())
}

// gaInterface is one interface of qemu-guest-agent's
// guest-network-get-interfaces reply.
type gaInterface struct {
	Name      string `json:"name"`
	MAC       string `json:"hardware-address"`
	Addresses []struct {
		Type    string `json:"ip-address-type"`
		Address string `json:"ip-address"`
	} `json:"ip-addresses"`
}

// domainStatusInterfaces turns the guest agent's reply into the domain
// status interfaces virt-launcher hands virt-handler. libvirt passes the
// agent's interfaces through (virDomainGetGuestInfo); virt-launcher's
// agent poller (convertToInterfaces, which takes a cgo libvirt type, so
// it is not called here) skips "lo" and takes the first IPv4 address as
// the main one, else the first address.
func domainStatusInterfaces(b []byte) ([]api.InterfaceStatus, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var ga []gaInterface
	if err := json.Unmarshal(b, &ga); err != nil {
		return nil, err
	}
	var out []api.InterfaceStatus
	for _, g := range ga {
		if g.Name == "lo" {
			continue
		}
		s := api.InterfaceStatus{Mac: g.MAC, InterfaceName: g.Name}
		for _, a := range g.Addresses {
			if a.Type == "ipv4" && s.Ip == "" {
				s.Ip = a.Address
			}
			s.IPs = append(s.IPs, a.Address)
		}
		if s.Ip == "" && len(s.IPs) > 0 {
			s.Ip = s.IPs[0]
		}
		out = append(out, s)
	}
	return out, nil
}

// status runs virt-handler's NetStat.UpdateStatus on a case directory:
// vmi.json (the VMI, with the previous status.interfaces), domain.xml,
// podcache.json (pod IPs by interface name, what virt-handler's pod
// interface cache holds) and guest-agent.json (may be absent).
func status(dir string) error {
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if os.IsNotExist(err) {
			return nil, nil
		}
		return b, err
	}
	b, err := read("vmi.json")
	if err != nil {
		return err
	}
	vmi := &v1.VirtualMachineInstance{}
	if err := json.Unmarshal(b, vmi); err != nil {
		return fmt.Errorf("vmi.json: %w", err)
	}
	dom := &api.Domain{}
	if b, err = read("domain.xml"); err != nil {
		return err
	}
	if err := xml.Unmarshal(b, &dom.Spec); err != nil {
		return fmt.Errorf("domain.xml: %w", err)
	}
	if b, err = read("guest-agent.json"); err != nil {
		return err
	}
	if dom.Status.Interfaces, err = domainStatusInterfaces(b); err != nil {
		return fmt.Errorf("guest-agent.json: %w", err)
	}
	tmp, err := os.MkdirTemp("", "kvprobe1x-cache")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	creator := tmpCache{tmp}
	if b, err = read("podcache.json"); err != nil {
		return err
	}
	podIPs := map[string][]string{}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &podIPs); err != nil {
			return fmt.Errorf("podcache.json: %w", err)
		}
	}
	for name, ips := range podIPs {
		d := &cache.PodIfaceCacheData{PodIPs: ips}
		if len(ips) > 0 {
			d.PodIP = ips[0]
		}
		// Where cache.ReadPodInterfaceCache looks (WritePodInterfaceCache
		// would give the file to KubeVirt's qemu user, absent here).
		p := filepath.Join(tmp, util.VirtPrivateDir, "network-info-cache", string(vmi.UID), name)
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return err
		}
	}
	if err := netsetup.NewNetStateWithCustomFactory(creator).UpdateStatus(vmi, dom); err != nil {
		return err
	}
	if vmi.Status.Interfaces == nil {
		vmi.Status.Interfaces = []v1.VirtualMachineInstanceNetworkInterface{}
	}
	return emit(vmi.Status.Interfaces)
}
