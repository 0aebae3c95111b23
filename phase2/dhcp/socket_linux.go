package dhcp

import (
	"fmt"
	"net"
	"os"

	"github.com/insomniacslk/dhcp/dhcpv6"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// The DHCP sockets are exclusive: bound to the bridge (SO_BINDTODEVICE)
// without SO_REUSEADDR or SO_REUSEPORT, unlike the DHCP library's own
// (which sets both "to aid debugging"). Once the server is bound, no other
// process of the pod, whatever its uid, can bind the same port on the
// bridge or on no device, so none can receive the VM's DHCP traffic
// beside it; one bound first makes Serve fail with a [*BindError] that
// names the port, instead of sharing it.

// listenExclusive opens a UDP socket of family (AF_INET, AF_INET6) on
// port, bound to device.
func listenExclusive(family int, device string, port int) (*net.UDPConn, error) {
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "dhcp")
	defer f.Close() // FilePacketConn dups it
	var sa unix.Sockaddr
	switch family {
	case unix.AF_INET:
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BROADCAST, 1); err != nil {
			return nil, fmt.Errorf("SO_BROADCAST: %w", err)
		}
		sa = &unix.SockaddrInet4{Port: port}
	default:
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return nil, fmt.Errorf("IPV6_V6ONLY: %w", err)
		}
		sa = &unix.SockaddrInet6{Port: port}
	}
	if err := unix.BindToDevice(fd, device); err != nil {
		return nil, fmt.Errorf("SO_BINDTODEVICE %s: %w", device, err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("bind port %d: %w", port, err)
	}
	c, err := net.FilePacketConn(f)
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}

// listen4 is the DHCPv4 server socket: UDP 0.0.0.0:67 on the bridge.
func listen4(bridge string) (*net.UDPConn, error) {
	return listenExclusive(unix.AF_INET, bridge, 67)
}

// listen6 is the DHCPv6 server socket: UDP [::]:547 on the bridge, joined
// to All_DHCP_Relay_Agents_and_Servers and All_DHCP_Servers.
func listen6(ifi *net.Interface) (*net.UDPConn, error) {
	c, err := listenExclusive(unix.AF_INET6, ifi.Name, dhcpv6.DefaultServerPort)
	if err != nil {
		return nil, err
	}
	p := ipv6.NewPacketConn(c)
	for _, g := range []net.IP{dhcpv6.AllDHCPRelayAgentsAndServers, dhcpv6.AllDHCPServers} {
		if err := p.JoinGroup(ifi, &net.UDPAddr{IP: g, Port: dhcpv6.DefaultServerPort}); err != nil {
			c.Close()
			return nil, fmt.Errorf("join %s: %w", g, err)
		}
	}
	return c, nil
}
