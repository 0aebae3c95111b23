//go:build !linux

package phase1

import "github.com/virtnet/virtnet/internal/netdriver"

// namespaceInode needs Linux; elsewhere no namespace can be opened.
func namespaceInode(path string) (uint64, error) { return 0, netdriver.ErrNotSupported }
