package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/virtnet/virtnet/netdriver/netdrivertest"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/registry"
	"github.com/virtnet/virtnet/cache"
	"github.com/virtnet/virtnet/netdriver"
	"github.com/virtnet/virtnet/phase1"
)

// SimulatedMTU is the MTU of the simulated pod links (an overlay's, as in
// the source document).
const SimulatedMTU = 1440

// simulatedPod seeds a fake namespace with the links a CNI would leave
// for the VMI's networks: eth0 (the pod network) 10.244.1.7/24 with a
// default route via 10.244.1.1, net<N> (the N-th network, from 1)
// 192.168.<N>.7/24 with a route to 192.168.0.0/16 via 192.168.<N>.1 (a
// bridge binding with IPAM needs a gateway); each link's MAC
// is 0a:58 followed by its IPv4 address (as OVN-Kubernetes forms them),
// MTU [SimulatedMTU]. A macvtap network gets a macvtap link without
// addresses, as the macvtap CNI leaves it.
func simulatedPod(vmi *api.VMI) (*netdrivertest.Fake, error) {
	pairs, err := api.Pairs(vmi)
	if err != nil {
		return nil, err
	}
	fake := netdrivertest.NewFake()
	for i, p := range pairs {
		var ip, gw netip.Addr
		if p.PodInterface == api.PrimaryPodInterface {
			ip, gw = netip.AddrFrom4([4]byte{10, 244, 1, 7}), netip.AddrFrom4([4]byte{10, 244, 1, 1})
		} else {
			n := byte(i + 1)
			ip, gw = netip.AddrFrom4([4]byte{192, 168, n, 7}), netip.AddrFrom4([4]byte{192, 168, n, 1})
		}
		a := ip.As4()
		link := netdrivertest.PodLink{
			Name:      p.PodInterface,
			MAC:       net.HardwareAddr{0x0a, 0x58, a[0], a[1], a[2], a[3]},
			MTU:       SimulatedMTU,
			Addresses: []netip.Prefix{netip.PrefixFrom(ip, 24)},
		}
		dst := netip.MustParsePrefix("0.0.0.0/0")
		if p.PodInterface != api.PrimaryPodInterface {
			dst = netip.MustParsePrefix("192.168.0.0/16")
		}
		link.Routes = []netdriver.Route{{Dst: dst, Gateway: gw}}
		if p.Binding() == api.BindingMacvtap {
			// The macvtap CNI moves a macvtap, without addresses,
			// into the pod under the pod interface's name.
			link.Type, link.Addresses, link.Routes = netdriver.TypeMacvtap, nil, nil
		}
		fake.SeedPodLink(link)
	}
	return fake, nil
}

// simulatePhase1 runs phase1 against the simulated pod (vmi has its uid:
// loadVMI fills it in).
func simulatePhase1(ctx context.Context, vmi *api.VMI, store *cache.Store, logger *slog.Logger) error {
	fake, err := simulatedPod(vmi)
	if err != nil {
		return fmt.Errorf("simulated pod: %w", err)
	}
	return phase1.Run(ctx, vmi, "", store, phase1.Options{Driver: fake, Logger: logger, Registry: registry.Default()})
}
