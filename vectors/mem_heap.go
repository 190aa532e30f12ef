//go:build !(linux || darwin || freebsd) || race

package vectors

// allocBlock returns size zeroed bytes from the Go heap. Used where anonymous
// mappings are not available, and under the race detector, which only
// watches Go heap memory.
func allocBlock(size int) ([]byte, error) { return make([]byte, size), nil }

func freeBlock([]byte) {}

const offHeap = false
