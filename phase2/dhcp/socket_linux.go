package dhcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

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
		if errors.Is(err, unix.EADDRINUSE) {
			// Nothing of virtnet's holds the port: a process of the
			// pod bound it first (ip_unprivileged_port_start is 67
			// for a non-root VMI). Say who.
			return nil, fmt.Errorf("bind port %d: %w: UDP port %d is taken by another socket of the pod's network namespace (%s): "+
				"a process of the pod bound it before the DHCP server, and would get the VM's DHCP", port, err, port, portHolders(family, port))
		}
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

// portHolders describes the UDP sockets of the calling thread's network
// namespace bound to port: owner uid, local address and inode, from
// /proc/thread-self/net/udp (udp6).
func portHolders(family, port int) string {
	name := "/proc/thread-self/net/udp"
	if family == unix.AF_INET6 {
		name += "6"
	}
	f, err := os.Open(name)
	if err != nil {
		return "its owner unknown: " + err.Error()
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		addr, p, ok := procAddr(fields[1])
		if !ok || p != port {
			continue
		}
		found = append(found, fmt.Sprintf("uid %s, %s, inode %s", fields[7], netip.AddrPortFrom(addr, uint16(p)), fields[9]))
	}
	if len(found) == 0 {
		return "its owner not found in " + name
	}
	return strings.Join(found, "; ")
}

// procAddr parses a /proc/net/udp address, "0100007F:0043": the address
// as the kernel's 32-bit words, each printed as a number in host order,
// then the port in hex.
func procAddr(s string) (netip.Addr, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || (len(a) != 8 && len(a) != 32) {
		return netip.Addr{}, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	b := make([]byte, len(a)/2)
	for i := 0; i < len(b); i += 4 {
		w, err := strconv.ParseUint(a[2*i:2*i+8], 16, 32)
		if err != nil {
			return netip.Addr{}, 0, false
		}
		binary.NativeEndian.PutUint32(b[i:], uint32(w))
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr.Unmap(), int(port), true
}
