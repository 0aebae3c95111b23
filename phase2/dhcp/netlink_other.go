//go:build !linux

package dhcp

import (
	"context"
	"net"
	"net/netip"

	"github.com/mdlayher/ndp"

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

type frameSender struct{}

func (s *Server) openFrameSender(*net.Interface) (*frameSender, error) {
	return nil, nsexec.ErrNotSupported
}

func (f *frameSender) close() {}

func (f *frameSender) send(*ndp.RouterAdvertisement, netip.Addr) (bool, error) {
	return false, nsexec.ErrNotSupported
}
