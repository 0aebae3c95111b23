package passt

import (
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/virtnet/virtnet/api"
	"github.com/virtnet/virtnet/binding/internal/nicxml"
)

// PortForwards are the <portForward> elements of an interface: one per
// protocol in use (tcp first), its ports sorted and adjacent ones merged
// into ranges; with no port declared, an empty tcp and an empty udp
// element, which forward every port.
func PortForwards(iface *api.Interface) ([]libvirtxml.DomainInterfaceSourcePortForward, error) {
	if len(iface.Ports) == 0 {
		return []libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp"}, {Proto: "udp"}}, nil
	}
	byProto := map[string][]uint{}
	for _, p := range iface.Ports {
		proto, err := nicxml.ForwardProtocol(iface, p)
		if err != nil {
			return nil, err
		}
		byProto[proto] = append(byProto[proto], uint(p.Port))
	}
	var out []libvirtxml.DomainInterfaceSourcePortForward
	for _, proto := range []string{"tcp", "udp"} {
		ports := byProto[proto]
		if len(ports) == 0 {
			continue
		}
		slices.Sort(ports)
		ports = slices.Compact(ports)
		pf := libvirtxml.DomainInterfaceSourcePortForward{Proto: proto}
		for i := 0; i < len(ports); {
			j := i
			for j+1 < len(ports) && ports[j+1] == ports[j]+1 {
				j++
			}
			r := libvirtxml.DomainInterfaceSourcePortForwardRange{Start: ports[i]}
			if j > i {
				r.End = ports[j]
			}
			pf.Ranges = append(pf.Ranges, r)
			i = j + 1
		}
		out = append(out, pf)
	}
	return out, nil
}

// lowestPort is the lowest port passt binds: the lowest declared port, or
// 0 when every port is forwarded.
func lowestPort(iface *api.Interface) int {
	if len(iface.Ports) == 0 {
		return 0
	}
	low := int(iface.Ports[0].Port)
	for _, p := range iface.Ports[1:] {
		low = min(low, int(p.Port))
	}
	return low
}
