package netdrivertest

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/virtnet/virtnet/netdriver"
)

// SimLink is one pod link of a simulated pod.
type SimLink struct {
	Name string
	// Type is the link type the CNI would leave (TypeVeth, or
	// TypeMacvtap for a macvtap network); empty means TypeVeth.
	Type string
	// NoIPAM leaves the link without addresses (layer 2 only).
	NoIPAM bool
}

// SimulatedPod returns a Fake seeded as a CNI plugin leaves a pod: one up
// link per entry, MTU 1440, a stable MAC, and (unless NoIPAM) an address
// and routes. The link at position 0 (eth0 in practice) gets
// 10.244.1.7/24 with a default route via 10.244.1.1; link i > 0 gets
// 192.168.i.7/24 with a route to 10.100.i.0/24 via 192.168.i.1.
func SimulatedPod(links ...SimLink) *Fake {
	f := NewFake()
	for i, l := range links {
		p := PodLink{
			Name: l.Name,
			Type: l.Type,
			MAC:  net.HardwareAddr{0x0a, 0x58, 0x0a, 0xf4, 0x01, byte(7 + i)},
			MTU:  1440,
		}
		if !l.NoIPAM {
			if i == 0 {
				p.Addresses = []netip.Prefix{netip.MustParsePrefix("10.244.1.7/24")}
				p.Routes = []netdriver.Route{{Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.244.1.1")}}
			} else {
				p.Addresses = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("192.168.%d.7/24", i%256))}
				p.Routes = []netdriver.Route{{
					Dst:     netip.MustParsePrefix(fmt.Sprintf("10.100.%d.0/24", i%256)),
					Gateway: netip.MustParseAddr(fmt.Sprintf("192.168.%d.1", i%256)),
				}}
			}
		}
		f.SeedPodLink(p)
	}
	return f
}
