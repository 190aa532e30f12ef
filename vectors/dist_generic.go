//go:build !amd64 || purego

package vectors

const useAVX2 = false

// dotF32I8 returns Σ q[i]·int8(c[i]) over len(q) elements.
func dotF32I8(q []float32, c []byte) float32 { return dotF32I8Go(q, c) }

// dotI8I8 returns Σ int8(a[i])·int8(b[i]) over len(a) elements.
func dotI8I8(a, b []byte) int32 { return dotI8I8Go(a, b) }

func prefetch(*byte) {}

func prefetchLinks(*uint32) {}
