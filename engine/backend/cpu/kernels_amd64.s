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
// the lanes are added as ((0+1)+(2+3)) + ((4+5)+(6+7)); four rows run side
// by side and share the reduction, which adds in the same order.
//
// Registers: DI y, SI row 0 of the group, R11-R13 rows 1-3, DX x, CX rows
// left, R8 bytes of the unmasked part of a row, R9 stride in bytes, AX n%8,
// BX byte offset in the row, Y14 the tail mask, Y13 x's masked tail.
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
	JZ   rows4
	VMASKMOVPS (DX)(R8*1), Y14, Y13

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
