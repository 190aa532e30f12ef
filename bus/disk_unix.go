//go:build unix

package bus

import "syscall"

// volumeSpace returns the free (for unprivileged users) and total bytes of
// the volume that holds dir.
func volumeSpace(dir string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
