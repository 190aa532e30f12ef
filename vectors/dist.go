package vectors

// Distance kernels. Vectors are stored as int8 codes with one float32 scale
// per vector (x ≈ scale·code); every kernel here returns a raw dot product
// that the caller multiplies by the scales.
//
// There are two: dotF32I8 (a float32 query against int8 codes: the search and
// insert distance) and dotI8I8 (two sets of codes: the neighbour-selection
// heuristic, which compares stored vectors with each other). On amd64 with
// AVX2 and FMA both run in assembly (dist_amd64.s); elsewhere, or with the
// purego build tag, in the unrolled Go below. BenchmarkKernels compares them.

// dotF32I8Go is the portable float32·int8 dot product: four accumulators,
// eight elements a step, so the adds of one step do not wait on each other.
func dotF32I8Go(q []float32, c []byte) float32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(q); i += 8 {
		qq := q[i : i+8 : i+8]
		cc := c[i : i+8 : i+8]
		s0 += qq[0]*float32(int8(cc[0])) + qq[4]*float32(int8(cc[4]))
		s1 += qq[1]*float32(int8(cc[1])) + qq[5]*float32(int8(cc[5]))
		s2 += qq[2]*float32(int8(cc[2])) + qq[6]*float32(int8(cc[6]))
		s3 += qq[3]*float32(int8(cc[3])) + qq[7]*float32(int8(cc[7]))
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(int8(c[i]))
	}
	return (s0 + s1) + (s2 + s3)
}

// dotI8I8Go is the portable int8·int8 dot product into int32; the sum of
// 2^17 products of at most 2^14 cannot overflow, far beyond any dimension
// used here.
func dotI8I8Go(a, b []byte) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa := a[i : i+8 : i+8]
		bb := b[i : i+8 : i+8]
		s0 += int32(int8(aa[0]))*int32(int8(bb[0])) + int32(int8(aa[4]))*int32(int8(bb[4]))
		s1 += int32(int8(aa[1]))*int32(int8(bb[1])) + int32(int8(aa[5]))*int32(int8(bb[5]))
		s2 += int32(int8(aa[2]))*int32(int8(bb[2])) + int32(int8(aa[6]))*int32(int8(bb[6]))
		s3 += int32(int8(aa[3]))*int32(int8(bb[3])) + int32(int8(aa[7]))*int32(int8(bb[7]))
	}
	for ; i < len(a); i++ {
		s0 += int32(int8(a[i])) * int32(int8(b[i]))
	}
	return s0 + s1 + s2 + s3
}

// dotF32 is a plain float32 dot product, for exact scans in tests and for
// normalising input.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
