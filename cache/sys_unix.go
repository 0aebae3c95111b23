//go:build unix

package cache

import (
	"io/fs"
	"syscall"
)

// oNoFollow makes an open fail on a symlink.
const oNoFollow = syscall.O_NOFOLLOW

// fileOwner is the uid that owns fi.
func fileOwner(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
