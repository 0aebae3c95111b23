package dhcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/jsimonetti/rtnetlink/v2"
	"github.com/mdlayher/ndp"
	"golang.org/x/sys/unix"

	"github.com/virtnet/virtnet/internal/nsexec"
)

// frameSender sends router advertisements of a shared bridge (see
// [Config6.Shared]) as whole Ethernet frames: from the router's link-local
// address (not one of the namespace's), to all-nodes, in a frame addressed
// to the VM's MAC, so that the bridge forwards it to the VM's port alone.
type frameSender struct {
	fd      int
	ifindex int
	srcMAC  net.HardwareAddr
	vmMAC   net.HardwareAddr
	// fdb lists the bridge's forwarding database (nil: not checked).
	fdb *rtnetlink.Conn
}

// openFrameSender opens a packet socket on the bridge ifi in the server's
// namespace (it needs CAP_NET_RAW, as the ICMPv6 socket does).
func (s *Server) openFrameSender(ifi *net.Interface) (*frameSender, error) {
	f := &frameSender{fd: -1, ifindex: ifi.Index, srcMAC: ifi.HardwareAddr, vmMAC: s.cfg.MAC}
	err := nsexec.Do(s.netns, func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		f.fd = fd
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.fdb, err = s.dial(0); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

func (f *frameSender) close() {
	_ = unix.Close(f.fd)
	if f.fdb != nil {
		f.fdb.Close()
	}
}

// vmLearned reports whether the bridge has learnt on which port the VM's
// MAC is (a frame to it is then forwarded there alone; before, the bridge
// would flood it to every port, the pod's NIC included). phase1 turns
// learning off on the NIC's port, so a learnt entry is on the VM's side.
func (f *frameSender) vmLearned() (bool, error) {
	ns, err := dumpNeighbors(f.fdb, unix.AF_BRIDGE)
	if err != nil {
		return false, fmt.Errorf("bridge forwarding database: %w", err)
	}
	for _, n := range ns {
		if n.State&unix.NUD_PERMANENT == 0 && bytes.Equal(n.Attributes.LLAddress, f.vmMAC) {
			return true, nil
		}
	}
	return false, nil
}

// send writes ra from src to all-nodes in a frame to the VM's MAC; it
// sends nothing (and returns false) while the bridge has not learnt the
// VM's port.
func (f *frameSender) send(ra *ndp.RouterAdvertisement, src netip.Addr) (bool, error) {
	if ok, err := f.vmLearned(); err != nil || !ok {
		return false, err
	}
	frame, err := raFrame(ra, src, f.srcMAC, f.vmMAC)
	if err != nil {
		return false, err
	}
	sa := &unix.SockaddrLinklayer{Ifindex: f.ifindex, Protocol: htons(unix.ETH_P_IPV6), Halen: 6}
	copy(sa.Addr[:], f.vmMAC)
	if err := unix.Sendto(f.fd, frame, 0, sa); err != nil {
		return false, fmt.Errorf("send frame: %w", err)
	}
	return true, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// raFrame is the Ethernet frame of ra from the IPv6 address src (hop
// limit 255, as neighbour discovery requires) to all-nodes, from srcMAC to
// dstMAC.
func raFrame(ra *ndp.RouterAdvertisement, src netip.Addr, srcMAC, dstMAC net.HardwareAddr) ([]byte, error) {
	body, err := ndp.MarshalMessageChecksum(ra, src, allNodes)
	if err != nil {
		return nil, fmt.Errorf("router advertisement: %w", err)
	}
	b := make([]byte, 14+40, 14+40+len(body))
	copy(b[0:6], dstMAC)
	copy(b[6:12], srcMAC)
	binary.BigEndian.PutUint16(b[12:14], unix.ETH_P_IPV6)
	ip := b[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:6], uint16(len(body)))
	ip[6] = unix.IPPROTO_ICMPV6
	ip[7] = 255
	s, d := src.As16(), allNodes.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
	return append(b, body...), nil
}
