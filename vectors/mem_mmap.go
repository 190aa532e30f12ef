//go:build (linux || darwin || freebsd) && !race

package vectors

import (
	"fmt"
	"syscall"
)

// allocBlock returns size bytes of zeroed memory outside the Go heap: an
// anonymous private mapping. The vector codes and the level-0 links (about
// 0.5 GiB at 1M × 384) live here, so they neither count toward the garbage
// collector's heap goal (which would let the rest of the process grow to
// twice their size before a collection) nor get scanned. Pages are only
// backed by RAM once touched.
func allocBlock(size int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return b, nil
}

// freeBlock returns a block from allocBlock to the system.
func freeBlock(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b)
	}
}

const offHeap = true
