//go:build !unix

package safefile

import "io/fs"

// oNoFollow is 0 where open has no O_NOFOLLOW; Check (lstat) and O_EXCL
// still refuse a link.
const oNoFollow = 0

// links is 1 where the platform does not give a hard link count.
func links(fs.FileInfo) uint64 { return 1 }
