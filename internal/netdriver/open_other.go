//go:build !linux

package netdriver

// OpenDriver returns [ErrNotSupported]: the real driver needs Linux.
func OpenDriver(nsPath string) (Driver, func() error, error) {
	return nil, nil, ErrNotSupported
}
