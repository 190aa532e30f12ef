//go:build amd64 && !purego

package vectors

import "golang.org/x/sys/cpu"

// useAVX2 picks the assembly kernels; the race detector's tests flip it to
// compare both paths.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func dotF32I8AVX2(q *float32, c *byte, n int) float32

//go:noescape
func dotI8I8AVX2(a, b *byte, n int) int32

// dotF32I8 returns Σ q[i]·int8(c[i]) over len(q) elements.
func dotF32I8(q []float32, c []byte) float32 {
	n := len(q)
	c = c[:n]
	if !useAVX2 || n < 32 {
		return dotF32I8Go(q, c)
	}
	head := n &^ 31
	s := dotF32I8AVX2(&q[0], &c[0], head)
	if head < n {
		s += dotF32I8Go(q[head:], c[head:])
	}
	return s
}

// dotI8I8 returns Σ int8(a[i])·int8(b[i]) over len(a) elements.
func dotI8I8(a, b []byte) int32 {
	n := len(a)
	b = b[:n]
	if !useAVX2 || n < 32 {
		return dotI8I8Go(a, b)
	}
	head := n &^ 31
	s := dotI8I8AVX2(&a[0], &b[0], head)
	if head < n {
		s += dotI8I8Go(a[head:], b[head:])
	}
	return s
}

// prefetch hints that the record at p is about to be read.
//
//go:noescape
func prefetch(p *byte)

// prefetchLinks hints that the level-0 link list at p is about to be read.
//
//go:noescape
func prefetchLinks(p *uint32)
