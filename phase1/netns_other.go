//go:build !linux

package phase1

import "github.com/virtnet/virtnet/netdriver"

// namespaceID needs Linux; elsewhere no namespace can be opened.
func namespaceID(path string) (dev, ino uint64, err error) { return 0, 0, netdriver.ErrNotSupported }
