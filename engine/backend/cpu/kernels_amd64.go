//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels of kernels_amd64.s: the CPU has AVX2
// and FMA (Haswell and later, Zen and later) and the OS saves the wide
// registers (x/sys/cpu checks OSXSAVE).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotRowsAVX2 is dotRows for rows ≥ 1 rows of n ≥ 1 elements, stride
// elements apart, into y[0:rows].
//
//go:noescape
func dotRowsAVX2(y, w, x *float32, rows, n, stride int)

// accumRowsAVX2 is accumRows for rows ≥ 1 rows of n ≥ 1 elements, stride
// elements apart, weighted by p[0:rows].
//
//go:noescape
func accumRowsAVX2(y, w, p *float32, rows, n, stride int)

func dotRowsKernel(y, w []float32, stride int, x []float32) {
	if useAVX2 {
		dotRowsAVX2(&y[0], &w[0], &x[0], len(y), len(x), stride)
		return
	}
	dotRowsGo(y, w, stride, x)
}

func accumRowsKernel(y, w []float32, stride int, p []float32) {
	if useAVX2 {
		accumRowsAVX2(&y[0], &w[0], &p[0], len(p), len(y), stride)
		return
	}
	accumRowsGo(y, w, stride, p)
}

// softmaxAVX2 is softmaxScaled for n ≥ 1 scores (float32 sum).
//
//go:noescape
func softmaxAVX2(s *float32, n int, scale float32)

func softmaxKernel(s []float32, scale float32) {
	if useAVX2 {
		softmaxAVX2(&s[0], len(s), scale)
		return
	}
	softmaxGo(s, scale)
}

// siluMulAVX2 is siluMul for n ≥ 1 elements.
//
//go:noescape
func siluMulAVX2(y, gate, up *float32, n int)

func siluMulKernel(y, g, u []float32) {
	if useAVX2 {
		siluMulAVX2(&y[0], &g[0], &u[0], len(y))
		return
	}
	siluMulGo(y, g, u)
}
