package netdriver

import (
	"context"
	"net"
	"net/netip"
)

// NeighborResolver is an optional interface of a [Driver]: the MAC
// address a neighbour answers to on a link, resolved by the kernel's
// neighbour discovery (ARP or NDP) when the table does not hold it yet.
type NeighborResolver interface {
	// ResolveNeighbor returns the MAC of addr on the link named link,
	// making the kernel resolve it when its table has no usable entry
	// (`ping -c 1 ADDR` would, but phase1 sends one UDP datagram to the
	// discard port instead), until ctx ends.
	ResolveNeighbor(ctx context.Context, link string, addr netip.Addr) (net.HardwareAddr, error)
}
