//go:build unix

package system

import (
	"io/fs"
	"syscall"
)

// ownerOf is the user id that owns a file.
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
