//go:build !unix

package system

import "io/fs"

// ownerOf is unknown off Unix: every file counts as this user's.
func ownerOf(fs.FileInfo) (int, bool) { return 0, false }
