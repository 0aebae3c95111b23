//go:build !unix

package cache

import "io/fs"

// oNoFollow is zero where open(2) has no O_NOFOLLOW; the records are
// checked with Lstat before they are opened (checkFile) all the same. The
// store is written on Linux nodes; this file lets a launcher on another
// OS build the packages that read records and render domain XML.
const oNoFollow = 0

// fileOwner has no uid to give off Unix.
func fileOwner(fs.FileInfo) (uint32, bool) { return 0, false }
