//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA kernels for kernels.go. Rows are read in chunks of eight
// float32 lanes; a row's last n%8 elements are read with VMASKMOVPS, which
// neither loads nor faults on the masked lanes, so no kernel touches memory
// past the slices kernels.go has bounds-checked.

// tailMask<>: eight all-ones lanes then eight zero lanes. The 32 bytes at
// element 8-t enable exactly the first t lanes.
DATA tailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tailMask<>+32(SB)/8, $0
DATA tailMask<>+40(SB)/8, $0
DATA tailMask<>+48(SB)/8, $0
DATA tailMask<>+56(SB)/8, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// func dotRowsAVX2(y, w, x *float32, rows, n, stride int)
//
// y[r] = Σ_c w[r·stride+c]·x[c]. Each row accumulates in one register of
// eight lanes (lane i sums elements c ≡ i mod 8, fused multiply-add), then
// the lanes are added as ((0+1)+(2+3)) + ((4+5)+(6+7)); eight rows (then
// four, then one) run side by side, so eight independent multiply-add
// chains hide the FMA latency, and share the reduction, which adds in the
// same order for every group size.
//
// Registers: DI y, SI row 0 of the group, R11-R13 rows 1-3, DX x, CX rows
// left, R8 bytes of the unmasked part of a row, R9 stride in bytes, AX n%8,
// BX byte offset in the row (a pointer into x in rows8), R10 4·stride,
// Y14 the tail mask, Y13 x's masked tail.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ rows+24(FP), CX
	MOVQ n+32(FP), R8
	MOVQ stride+40(FP), R9
	SHLQ $2, R9
	MOVQ R8, AX
	ANDQ $7, AX
	MOVQ $8, BX
	SUBQ AX, BX
	LEAQ tailMask<>(SB), R10
	VMOVDQU (R10)(BX*4), Y14
	ANDQ $-8, R8
	SHLQ $2, R8
	TESTQ AX, AX
	JZ   rows8
	VMASKMOVPS (DX)(R8*1), Y14, Y13

rows8:
	// Groups of eight rows: SI, R11-R13 point at rows 0-3 and, offset by
	// R10 = 4·stride, rows 4-7; they advance with BX through x.
	CMPQ CX, $8
	JLT  rows4
	LEAQ (SI)(R9*1), R11
	LEAQ (SI)(R9*2), R12
	LEAQ (R11)(R9*2), R13
	LEAQ (R9)(R9*1), R10
	SHLQ $1, R10
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ DX, BX
	LEAQ (DX)(R8*1), R8
	CMPQ BX, R8
	JGE  tail8

loop8:
	VMOVUPS     (BX), Y8
	VFMADD231PS (SI), Y8, Y0
	VFMADD231PS (R11), Y8, Y1
	VFMADD231PS (R12), Y8, Y2
	VFMADD231PS (R13), Y8, Y3
	VFMADD231PS (SI)(R10*1), Y8, Y4
	VFMADD231PS (R11)(R10*1), Y8, Y5
	VFMADD231PS (R12)(R10*1), Y8, Y6
	VFMADD231PS (R13)(R10*1), Y8, Y7
	ADDQ        $32, BX
	ADDQ        $32, SI
	ADDQ        $32, R11
	ADDQ        $32, R12
	ADDQ        $32, R13
	CMPQ        BX, R8
	JLT         loop8

tail8:
	SUBQ DX, R8 // back to the byte count; SI is R8 past its row start
	TESTQ AX, AX
	JZ    reduce8
	VMASKMOVPS  (SI), Y14, Y9
	VFMADD231PS Y9, Y13, Y0
	VMASKMOVPS  (R11), Y14, Y10
	VFMADD231PS Y10, Y13, Y1
	VMASKMOVPS  (R12), Y14, Y11
	VFMADD231PS Y11, Y13, Y2
	VMASKMOVPS  (R13), Y14, Y12
	VFMADD231PS Y12, Y13, Y3
	VMASKMOVPS  (SI)(R10*1), Y14, Y9
	VFMADD231PS Y9, Y13, Y4
	VMASKMOVPS  (R11)(R10*1), Y14, Y10
	VFMADD231PS Y10, Y13, Y5
	VMASKMOVPS  (R12)(R10*1), Y14, Y11
	VFMADD231PS Y11, Y13, Y6
	VMASKMOVPS  (R13)(R10*1), Y14, Y12
	VFMADD231PS Y12, Y13, Y7

reduce8:
	// As reduce4 for rows 0-3 and 4-7, then the low halves of both (lanes
	// 0-3 of each row) plus the high halves: the same order as reduce4.
	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y2, Y0, Y0
	VHADDPS    Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y1
	VMOVUPS    Y1, (DI)
	ADDQ       $32, DI
	SUBQ       R8, SI
	LEAQ       (SI)(R9*8), SI
	SUBQ       $8, CX
	JMP        rows8

rows4:
	CMPQ CX, $4
	JLT  rows1
	LEAQ (SI)(R9*1), R11
	LEAQ (SI)(R9*2), R12
	LEAQ (R11)(R9*2), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ BX, BX
	CMPQ BX, R8
	JGE  tail4

loop4:
	VMOVUPS     (DX)(BX*1), Y4
	VFMADD231PS (SI)(BX*1), Y4, Y0
	VFMADD231PS (R11)(BX*1), Y4, Y1
	VFMADD231PS (R12)(BX*1), Y4, Y2
	VFMADD231PS (R13)(BX*1), Y4, Y3
	ADDQ        $32, BX
	CMPQ        BX, R8
	JLT         loop4

tail4:
	TESTQ AX, AX
	JZ    reduce4
	VMASKMOVPS  (SI)(BX*1), Y14, Y5
	VFMADD231PS Y5, Y13, Y0
	VMASKMOVPS  (R11)(BX*1), Y14, Y6
	VFMADD231PS Y6, Y13, Y1
	VMASKMOVPS  (R12)(BX*1), Y14, Y7
	VFMADD231PS Y7, Y13, Y2
	VMASKMOVPS  (R13)(BX*1), Y14, Y8
	VFMADD231PS Y8, Y13, Y3

reduce4:
	// hadd(Y0,Y1), hadd(Y2,Y3), then hadd of those: lane i of the low half
	// is row i's lanes 0-3, of the high half row i's lanes 4-7.
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DI)
	ADDQ         $16, DI
	LEAQ         (SI)(R9*4), SI
	SUBQ         $4, CX
	JMP          rows4

rows1:
	TESTQ CX, CX
	JZ    done
	VXORPS Y0, Y0, Y0
	XORQ   BX, BX
	CMPQ   BX, R8
	JGE    tail1

loop1:
	VMOVUPS     (DX)(BX*1), Y4
	VFMADD231PS (SI)(BX*1), Y4, Y0
	ADDQ        $32, BX
	CMPQ        BX, R8
	JLT         loop1

tail1:
	TESTQ AX, AX
	JZ    reduce1
	VMASKMOVPS  (SI)(BX*1), Y14, Y5
	VFMADD231PS Y5, Y13, Y0

reduce1:
	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DI)
	ADDQ         $4, DI
	ADDQ         R9, SI
	DECQ         CX
	JMP          rows1

done:
	VZEROUPPER
	RET

// func accumRowsAVX2(y, w, p *float32, rows, n, stride int)
//
// y[c] += Σ_r p[r]·w[r·stride+c], eight columns at a time. Rows r ≡ i mod 4
// accumulate in register i (fused multiply-add), leftover rows in register
// 0; then y + ((Y0+Y1) + (Y2+Y3)).
//
// Registers: DI y, SI w, DX p, CX rows, R13 rows rounded down to 4, R8
// bytes of the unmasked columns, R9 stride in bytes, AX n%8, BX column
// byte offset, R11 the current row's address, R12 the row index, Y14 the
// tail mask.
TEXT ·accumRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ p+16(FP), DX
	MOVQ rows+24(FP), CX
	MOVQ n+32(FP), R8
	MOVQ stride+40(FP), R9
	SHLQ $2, R9
	MOVQ R8, AX
	ANDQ $7, AX
	MOVQ $8, BX
	SUBQ AX, BX
	LEAQ tailMask<>(SB), R10
	VMOVDQU (R10)(BX*4), Y14
	ANDQ $-8, R8
	SHLQ $2, R8
	MOVQ CX, R13
	ANDQ $-4, R13
	XORQ BX, BX

chunk:
	CMPQ BX, R8
	JGE  lastchunk
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ   (SI)(BX*1), R11
	XORQ   R12, R12

c4:
	CMPQ         R12, R13
	JGE          c1
	VBROADCASTSS (DX)(R12*4), Y4
	VFMADD231PS  (R11), Y4, Y0
	VBROADCASTSS 4(DX)(R12*4), Y5
	VFMADD231PS  (R11)(R9*1), Y5, Y1
	LEAQ         (R11)(R9*2), R11
	VBROADCASTSS 8(DX)(R12*4), Y6
	VFMADD231PS  (R11), Y6, Y2
	VBROADCASTSS 12(DX)(R12*4), Y7
	VFMADD231PS  (R11)(R9*1), Y7, Y3
	LEAQ         (R11)(R9*2), R11
	ADDQ         $4, R12
	JMP          c4

c1:
	CMPQ         R12, CX
	JGE          csum
	VBROADCASTSS (DX)(R12*4), Y4
	VFMADD231PS  (R11), Y4, Y0
	ADDQ         R9, R11
	INCQ         R12
	JMP          c1

csum:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VMOVUPS (DI)(BX*1), Y1
	VADDPS  Y0, Y1, Y1
	VMOVUPS Y1, (DI)(BX*1)
	ADDQ    $32, BX
	JMP     chunk

lastchunk:
	TESTQ AX, AX
	JZ    adone
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ   (SI)(BX*1), R11
	XORQ   R12, R12

m4:
	CMPQ         R12, R13
	JGE          m1
	VBROADCASTSS (DX)(R12*4), Y4
	VMASKMOVPS   (R11), Y14, Y8
	VFMADD231PS  Y8, Y4, Y0
	VBROADCASTSS 4(DX)(R12*4), Y5
	VMASKMOVPS   (R11)(R9*1), Y14, Y9
	VFMADD231PS  Y9, Y5, Y1
	LEAQ         (R11)(R9*2), R11
	VBROADCASTSS 8(DX)(R12*4), Y6
	VMASKMOVPS   (R11), Y14, Y10
	VFMADD231PS  Y10, Y6, Y2
	VBROADCASTSS 12(DX)(R12*4), Y7
	VMASKMOVPS   (R11)(R9*1), Y14, Y11
	VFMADD231PS  Y11, Y7, Y3
	LEAQ         (R11)(R9*2), R11
	ADDQ         $4, R12
	JMP          m4

m1:
	CMPQ         R12, CX
	JGE          msum
	VBROADCASTSS (DX)(R12*4), Y4
	VMASKMOVPS   (R11), Y14, Y8
	VFMADD231PS  Y8, Y4, Y0
	ADDQ         R9, R11
	INCQ         R12
	JMP          m1

msum:
	VADDPS     Y1, Y0, Y0
	VADDPS     Y3, Y2, Y2
	VADDPS     Y2, Y0, Y0
	VMASKMOVPS (DI)(BX*1), Y14, Y1
	VADDPS     Y0, Y1, Y1
	VMASKMOVPS Y1, Y14, (DI)(BX*1)

adone:
	VZEROUPPER
	RET

// expConsts<>: the constants of expNeg (exp.go), each in eight lanes.
// +0: log₂e
DATA expConsts<>+0(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+8(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+16(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+24(SB)/8, $0x3fb8aa3b3fb8aa3b
// +32: 0.5
DATA expConsts<>+32(SB)/8, $0x3f0000003f000000
DATA expConsts<>+40(SB)/8, $0x3f0000003f000000
DATA expConsts<>+48(SB)/8, $0x3f0000003f000000
DATA expConsts<>+56(SB)/8, $0x3f0000003f000000
// +64: ln2, high bits
DATA expConsts<>+64(SB)/8, $0x3f3172003f317200
DATA expConsts<>+72(SB)/8, $0x3f3172003f317200
DATA expConsts<>+80(SB)/8, $0x3f3172003f317200
DATA expConsts<>+88(SB)/8, $0x3f3172003f317200
// +96: ln2 - ln2hi
DATA expConsts<>+96(SB)/8, $0x35bfbe8e35bfbe8e
DATA expConsts<>+104(SB)/8, $0x35bfbe8e35bfbe8e
DATA expConsts<>+112(SB)/8, $0x35bfbe8e35bfbe8e
DATA expConsts<>+120(SB)/8, $0x35bfbe8e35bfbe8e
// +128: 1/720
DATA expConsts<>+128(SB)/8, $0x3ab60b613ab60b61
DATA expConsts<>+136(SB)/8, $0x3ab60b613ab60b61
DATA expConsts<>+144(SB)/8, $0x3ab60b613ab60b61
DATA expConsts<>+152(SB)/8, $0x3ab60b613ab60b61
// +160: 1/120
DATA expConsts<>+160(SB)/8, $0x3c0888893c088889
DATA expConsts<>+168(SB)/8, $0x3c0888893c088889
DATA expConsts<>+176(SB)/8, $0x3c0888893c088889
DATA expConsts<>+184(SB)/8, $0x3c0888893c088889
// +192: 1/24
DATA expConsts<>+192(SB)/8, $0x3d2aaaab3d2aaaab
DATA expConsts<>+200(SB)/8, $0x3d2aaaab3d2aaaab
DATA expConsts<>+208(SB)/8, $0x3d2aaaab3d2aaaab
DATA expConsts<>+216(SB)/8, $0x3d2aaaab3d2aaaab
// +224: 1/6
DATA expConsts<>+224(SB)/8, $0x3e2aaaab3e2aaaab
DATA expConsts<>+232(SB)/8, $0x3e2aaaab3e2aaaab
DATA expConsts<>+240(SB)/8, $0x3e2aaaab3e2aaaab
DATA expConsts<>+248(SB)/8, $0x3e2aaaab3e2aaaab
// +256: 1/2
DATA expConsts<>+256(SB)/8, $0x3f0000003f000000
DATA expConsts<>+264(SB)/8, $0x3f0000003f000000
DATA expConsts<>+272(SB)/8, $0x3f0000003f000000
DATA expConsts<>+280(SB)/8, $0x3f0000003f000000
// +288: 1
DATA expConsts<>+288(SB)/8, $0x3f8000003f800000
DATA expConsts<>+296(SB)/8, $0x3f8000003f800000
DATA expConsts<>+304(SB)/8, $0x3f8000003f800000
DATA expConsts<>+312(SB)/8, $0x3f8000003f800000
// +320: -87.33, below which e^x underflows
DATA expConsts<>+320(SB)/8, $0xc2aea8f6c2aea8f6
DATA expConsts<>+328(SB)/8, $0xc2aea8f6c2aea8f6
DATA expConsts<>+336(SB)/8, $0xc2aea8f6c2aea8f6
DATA expConsts<>+344(SB)/8, $0xc2aea8f6c2aea8f6
// +352: -Inf
DATA expConsts<>+352(SB)/8, $0xff800000ff800000
DATA expConsts<>+360(SB)/8, $0xff800000ff800000
DATA expConsts<>+368(SB)/8, $0xff800000ff800000
DATA expConsts<>+376(SB)/8, $0xff800000ff800000
// +384: int32 127, the exponent bias
DATA expConsts<>+384(SB)/8, $0x7f0000007f
DATA expConsts<>+392(SB)/8, $0x7f0000007f
DATA expConsts<>+400(SB)/8, $0x7f0000007f
DATA expConsts<>+408(SB)/8, $0x7f0000007f
// +416: the float32 sign bit
DATA expConsts<>+416(SB)/8, $0x8000000080000000
DATA expConsts<>+424(SB)/8, $0x8000000080000000
DATA expConsts<>+432(SB)/8, $0x8000000080000000
DATA expConsts<>+440(SB)/8, $0x8000000080000000
GLOBL expConsts<>(SB), RODATA|NOPTR, $448

#define LOG2E expConsts<>+0(SB)
#define HALF expConsts<>+32(SB)
#define LN2HI expConsts<>+64(SB)
#define LN2LO expConsts<>+96(SB)
#define C6 expConsts<>+128(SB)
#define C5 expConsts<>+160(SB)
#define C4 expConsts<>+192(SB)
#define C3 expConsts<>+224(SB)
#define C2 expConsts<>+256(SB)
#define ONE expConsts<>+288(SB)
#define MIN expConsts<>+320(SB)
#define NEGINF expConsts<>+352(SB)
#define BIAS expConsts<>+384(SB)
#define SIGN expConsts<>+416(SB)

// EXPNEG sets out = e^x for the eight lanes of x <= 0 as expNeg does:
// n = floor(x·log₂e + 0.5), r = x - n·ln2 (in two parts), e^r by the
// degree-6 Taylor polynomial (Horner, fused), times 2^n built in the
// exponent bits; lanes where x < -87.33 give 0, NaN lanes NaN. t1, t2 are
// clobbered.
#define EXPNEG(x, out, t1, t2) \
	VMOVUPS      HALF, out; \
	VFMADD231PS  LOG2E, x, out; \
	VROUNDPS     $1, out, out; \
	VMOVUPS      x, t1; \
	VFNMADD231PS LN2HI, out, t1; \
	VFNMADD231PS LN2LO, out, t1; \
	VMOVUPS      C6, t2; \
	VFMADD213PS  C5, t1, t2; \
	VFMADD213PS  C4, t1, t2; \
	VFMADD213PS  C3, t1, t2; \
	VFMADD213PS  C2, t1, t2; \
	VFMADD213PS  ONE, t1, t2; \
	VFMADD213PS  ONE, t1, t2; \
	VCVTTPS2DQ   out, out; \
	VPADDD       BIAS, out, out; \
	VPSLLD       $23, out, out; \
	VMULPS       out, t2, out; \
	VCMPPS       $5, MIN, x, t1; \
	VANDPS       t1, out, out

// func softmaxAVX2(s *float32, n int, scale float32)
//
// s[0:n] = softmax(scale·s) in three passes over s: scale in place and
// take the maximum m; e = EXPNEG(s - m) in place, summed in eight float32
// lanes (then lanes (0+4)+(2+6) + (1+5)+(3+7)... by VHADDPS); multiply by
// the float32 1/sum. The last n%8 elements go through masked loads and
// stores; their missing lanes count as -Inf for the maximum and 0 for the
// sum.
//
// Registers: DI s, R8 bytes of the unmasked part, AX n%8, BX byte offset,
// Y14 tail mask, Y12 scale then 1/sum, Y13 -Inf, Y11 m, Y10 the sum.
TEXT ·softmaxAVX2(SB), NOSPLIT, $0-20
	MOVQ s+0(FP), DI
	MOVQ n+8(FP), R8
	MOVQ R8, AX
	ANDQ $7, AX
	MOVQ $8, BX
	SUBQ AX, BX
	LEAQ tailMask<>(SB), R10
	VMOVDQU (R10)(BX*4), Y14
	ANDQ $-8, R8
	SHLQ $2, R8
	VBROADCASTSS scale+16(FP), Y12
	VMOVUPS NEGINF, Y13

	// Pass 1: s *= scale, Y0 = lane-wise maximum.
	VMOVUPS Y13, Y0
	XORQ    BX, BX
	CMPQ    BX, R8
	JGE     maxtail

maxloop:
	VMULPS  (DI)(BX*1), Y12, Y1
	VMOVUPS Y1, (DI)(BX*1)
	VMAXPS  Y1, Y0, Y0
	ADDQ    $32, BX
	CMPQ    BX, R8
	JLT     maxloop

maxtail:
	TESTQ AX, AX
	JZ    maxreduce
	VMASKMOVPS (DI)(BX*1), Y14, Y1
	VMULPS     Y1, Y12, Y1
	VMASKMOVPS Y1, Y14, (DI)(BX*1)
	VBLENDVPS  Y14, Y1, Y13, Y1
	VMAXPS     Y1, Y0, Y0

maxreduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VBROADCASTSS X0, Y11

	// Pass 2: s = e^(s-m), Y10 = lane-wise sum.
	VXORPS Y10, Y10, Y10
	XORQ   BX, BX
	CMPQ   BX, R8
	JGE    exptail

exploop:
	VMOVUPS (DI)(BX*1), Y1
	VSUBPS  Y11, Y1, Y1
	EXPNEG(Y1, Y2, Y3, Y4)
	VMOVUPS Y2, (DI)(BX*1)
	VADDPS  Y2, Y10, Y10
	ADDQ    $32, BX
	CMPQ    BX, R8
	JLT     exploop

exptail:
	TESTQ AX, AX
	JZ    expreduce
	VMASKMOVPS (DI)(BX*1), Y14, Y1
	VSUBPS     Y11, Y1, Y1
	EXPNEG(Y1, Y2, Y3, Y4)
	VANDPS     Y14, Y2, Y2
	VMASKMOVPS Y2, Y14, (DI)(BX*1)
	VADDPS     Y2, Y10, Y10

expreduce:
	VEXTRACTF128 $1, Y10, X1
	VADDPS       X1, X10, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       ONE, X1
	VDIVSS       X0, X1, X1
	VBROADCASTSS X1, Y12

	// Pass 3: s *= 1/sum.
	XORQ BX, BX
	CMPQ BX, R8
	JGE  normtail

normloop:
	VMULPS  (DI)(BX*1), Y12, Y1
	VMOVUPS Y1, (DI)(BX*1)
	ADDQ    $32, BX
	CMPQ    BX, R8
	JLT     normloop

normtail:
	TESTQ AX, AX
	JZ    sdone
	VMASKMOVPS (DI)(BX*1), Y14, Y1
	VMULPS     Y1, Y12, Y1
	VMASKMOVPS Y1, Y14, (DI)(BX*1)

sdone:
	VZEROUPPER
	RET

// SILUDIV sets out = silu(x)·u for eight lanes from e = e^-|x| (EXPNEG of
// x with its sign bit set): x/(1+e) where x >= 0 and x·e/(1+e) where x < 0
// (both are x/(1+e^-x), the second without overflowing e^-x). e and t are
// clobbered. (g would name the goroutine register.)
#define SILUDIV(x, e, u, out, t) \
	VMULPS    e, x, t;               \
	VBLENDVPS x, t, x, out;          \
	VADDPS    ONE, e, e;             \
	VDIVPS    e, out, out;           \
	VMULPS    u, out, out

// func siluMulAVX2(y, gate, up *float32, n int)
//
// y[i] = silu(gate[i])·up[i] (SiLU and multiply, vLLM's SiluAndMul) for n
// elements, eight at a time, the last n%8 masked.
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ gate+8(FP), SI
	MOVQ up+16(FP), DX
	MOVQ n+24(FP), R8
	MOVQ R8, AX
	ANDQ $7, AX
	MOVQ $8, BX
	SUBQ AX, BX
	LEAQ tailMask<>(SB), R10
	VMOVDQU (R10)(BX*4), Y14
	ANDQ $-8, R8
	SHLQ $2, R8
	XORQ BX, BX
	CMPQ BX, R8
	JGE  silutail

siluloop:
	VMOVUPS (SI)(BX*1), Y0
	VMOVUPS (DX)(BX*1), Y1
	VORPS   SIGN, Y0, Y3
	EXPNEG(Y3, Y4, Y5, Y6)
	SILUDIV(Y0, Y4, Y1, Y2, Y5)
	VMOVUPS Y2, (DI)(BX*1)
	ADDQ    $32, BX
	CMPQ    BX, R8
	JLT     siluloop

silutail:
	TESTQ AX, AX
	JZ    siludone
	VMASKMOVPS (SI)(BX*1), Y14, Y0
	VMASKMOVPS (DX)(BX*1), Y14, Y1
	VORPS      SIGN, Y0, Y3
	EXPNEG(Y3, Y4, Y5, Y6)
	SILUDIV(Y0, Y4, Y1, Y2, Y5)
	VMASKMOVPS Y2, Y14, (DI)(BX*1)

siludone:
	VZEROUPPER
	RET
