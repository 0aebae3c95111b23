//go:build !unix || aix

package flock

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// tryLock has no flock(2) to call (x/sys/unix has none for AIX): the locks guard phase1's records, which
// only a Linux node writes. The packages that import this one still build
// everywhere, so that a launcher on any OS renders domain XML.
func tryLock(*os.File) (bool, error) {
	return false, fmt.Errorf("advisory file locks on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
