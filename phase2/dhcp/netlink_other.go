//go:build !linux

package dhcp

import (
	"context"
	"net"
	"net/netip"

	"github.com/virtnet/virtnet/internal/nsexec"
)

func (s *Server) waitLinkLocal(context.Context, int) (netip.Addr, error) {
	return netip.Addr{}, nsexec.ErrNotSupported
}

func (s *Server) neighbors(int) (func(netip.Addr) net.HardwareAddr, func(), error) {
	return nil, nil, nsexec.ErrNotSupported
}

func (s *Server) canRawICMPv6() error { return nsexec.ErrNotSupported }

func listen4(string) (*net.UDPConn, error)         { return nil, nsexec.ErrNotSupported }
func listen6(*net.Interface) (*net.UDPConn, error) { return nil, nsexec.ErrNotSupported }
