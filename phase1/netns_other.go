//go:build !linux

package phase1

import (
	"os"

	"github.com/virtnet/virtnet/netdriver"
)

// openNamespace needs Linux; elsewhere no namespace can be opened.
func openNamespace(path string) (*os.File, error) { return nil, netdriver.ErrNotSupported }

func namespaceID(f *os.File) (dev, ino uint64, err error) { return 0, 0, netdriver.ErrNotSupported }
