//go:build !linux

package kernel

import "github.com/virtnet/virtnet/netdriver"

// OpenDriver returns [netdriver.ErrNotSupported]: the real driver needs Linux.
func OpenDriver(nsPath string) (netdriver.Driver, func() error, error) {
	return nil, nil, netdriver.ErrNotSupported
}
