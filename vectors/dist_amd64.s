//go:build amd64 && !purego

#include "textflag.h"

// func dotF32I8AVX2(q *float32, c *byte, n int) float32
// n is a multiple of 32. Four independent accumulators of eight lanes:
// sign-extend 8 codes to int32, convert to float32, fused multiply-add.
TEXT ·dotF32I8AVX2(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), SI
	MOVQ c+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	SHRQ $5, CX
	JZ   f32done

f32loop:
	VPMOVSXBD   0(DI), Y4
	VPMOVSXBD   8(DI), Y5
	VPMOVSXBD   16(DI), Y6
	VPMOVSXBD   24(DI), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS 0(SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $32, DI
	ADDQ        $128, SI
	DECQ        CX
	JNZ         f32loop

f32done:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET

// func dotI8I8AVX2(a, b *byte, n int) int32
// n is a multiple of 32. Sign-extend 16 codes of each side to int16 and
// multiply-add adjacent pairs into eight int32 lanes (VPMADDWD).
TEXT ·dotI8I8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	SHRQ  $5, CX
	JZ    i8done

i8loop:
	VPMOVSXBW 0(SI), Y2
	VPMOVSXBW 16(SI), Y3
	VPMOVSXBW 0(DI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y4, Y2, Y2
	VPMADDWD  Y5, Y3, Y3
	VPADDD    Y2, Y0, Y0
	VPADDD    Y3, Y1, Y1
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       i8loop

i8done:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPHADDD      X0, X0, X0
	VPHADDD      X0, X0, X0
	VZEROUPPER
	MOVL         X0, ret+24(FP)
	RET

// func prefetch(p *byte)
// Asks for the 448 bytes at p (a record of up to 384 codes) to be brought
// into the cache; a prefetch never faults.
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ       p+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	RET

// func prefetchLinks(p *uint32)
// Asks for the 192 bytes at p (a level-0 link list of up to 1+47 uint32s).
TEXT ·prefetchLinks(SB), NOSPLIT, $0-8
	MOVQ       p+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	RET
