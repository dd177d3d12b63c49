package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kernelLengths are row lengths around the eight-lane chunks and the
// four-row groups of the assembly: empty, single, one short of, at and one
// past a multiple of 8, and long rows.
var kernelLengths = []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 128, 172, 255}

// kernelImpls are the versions of the kernels to test: the Go loops always,
// the dispatching entry (assembly where the CPU has it) too.
var kernelImpls = []struct {
	name  string
	dot   func(y, w []float32, stride int, x []float32)
	accum func(y, w []float32, stride int, p []float32)
}{
	{"go", dotRowsGo, accumRowsGo},
	{"dispatch", dotRowsKernel, accumRowsKernel},
}

// gamma is the float32 error bound of an n-term sum of products, (n+2)·u
// relative to Σ|aᵢbᵢ| with u = 2⁻²⁴ (Higham, Accuracy and Stability of
// Numerical Algorithms, §3.1: γₙ for any summation order, fused or not),
// plus a margin of 2.
func gamma(n int) float64 { return 2 * float64(n+2) * 0x1p-24 }

// guarded returns rows rows of n random values stride apart, with NaN in the
// gaps and in 16 elements after the last row, so a kernel that reads past a
// row's end returns NaN.
func guarded(rng *rand.Rand, rows, n, stride int) []float32 {
	w := make([]float32, max(0, (rows-1)*stride+n)+16)
	for i := range w {
		w[i] = float32(math.NaN())
	}
	for r := range rows {
		for c := range n {
			w[r*stride+c] = float32(rng.NormFloat64())
		}
	}
	return w[:max(0, (rows-1)*stride+n)]
}

// TestDotRowsAgainstFloat64: every row count 0..9 and row length of
// kernelLengths, with rows packed and with a gap, against float64 sums:
// within γₙ·Σ|wx|, and never reading the NaN guards.
func TestDotRowsAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, impl := range kernelImpls {
		for _, n := range kernelLengths {
			for rows := range 10 {
				for _, stride := range []int{n, n + 5} {
					w := guarded(rng, rows, n, stride)
					x := guarded(rng, 1, n, n)
					y := make([]float32, rows+1)
					y[rows] = 42 // past the output: must stay
					if n == 0 {
						for r := range rows {
							y[r] = 1 // an empty row's dot is 0
						}
						dotRows(y[:rows], w, stride, x)
					} else if rows > 0 {
						impl.dot(y[:rows], w, stride, x)
					}
					for r := range rows {
						var want, mag float64
						for c := range n {
							p := float64(w[r*stride+c]) * float64(x[c])
							want += p
							mag += math.Abs(p)
						}
						if d := math.Abs(float64(y[r]) - want); !(d <= gamma(n)*mag) {
							t.Fatalf("%s: rows %d n %d stride %d: y[%d] = %v, want %v (error %.3g > %.3g)", impl.name, rows, n, stride, r, y[r], want, d, gamma(n)*mag)
						}
					}
					if y[rows] != 42 {
						t.Fatalf("%s: rows %d n %d: wrote past the output", impl.name, rows, n)
					}
				}
			}
		}
	}
}

// TestAccumRowsAgainstFloat64: y += Σ p[r]·w[r] for row counts 0..9 and
// 255, widths of kernelLengths, into a y that already holds values, against
// float64; the element after y must stay untouched.
func TestAccumRowsAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, impl := range kernelImpls {
		for _, n := range kernelLengths {
			for _, rows := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255} {
				for _, stride := range []int{n, n + 3} {
					w := guarded(rng, rows, n, stride)
					p := guarded(rng, 1, rows, rows)
					y := make([]float32, n+1)
					for c := range n {
						y[c] = float32(rng.NormFloat64())
					}
					y[n] = 42
					y0 := append([]float32(nil), y...)
					if n == 0 || rows == 0 {
						accumRows(y[:n], w, stride, p)
					} else {
						impl.accum(y[:n], w, stride, p)
					}
					for c := range n {
						want, mag := float64(y0[c]), math.Abs(float64(y0[c]))
						for r := range rows {
							v := float64(p[r]) * float64(w[r*stride+c])
							want += v
							mag += math.Abs(v)
						}
						if d := math.Abs(float64(y[c]) - want); !(d <= gamma(rows+1)*mag) {
							t.Fatalf("%s: rows %d n %d stride %d: y[%d] = %v, want %v (error %.3g)", impl.name, rows, n, stride, c, y[c], want, d)
						}
					}
					if y[n] != 42 {
						t.Fatalf("%s: rows %d n %d: wrote past y", impl.name, rows, n)
					}
				}
			}
		}
	}
}

// TestDotRowsSameBitsAnyRowCount: a row's dot product has the same bits
// whether it is computed alone or inside a group of four or eight, in the
// Go and the assembly kernels (so prefill and decode agree bit for bit).
func TestDotRowsSameBitsAnyRowCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, impl := range kernelImpls {
		for _, n := range []int{5, 8, 29, 64, 172} {
			w, x := guarded(rng, 13, n, n), guarded(rng, 1, n, n)
			all := make([]float32, 13)
			impl.dot(all, w, n, x)
			for r := range 13 {
				one := make([]float32, 1)
				impl.dot(one, w[r*n:], n, x)
				if math.Float32bits(one[0]) != math.Float32bits(all[r]) {
					t.Fatalf("%s: n %d row %d: alone %v, in a batch %v", impl.name, n, r, one[0], all[r])
				}
			}
		}
	}
}

// TestKernelsRejectShortInput: a w shorter than the rows need panics with a
// DeviceError instead of reading past it.
func TestKernelsRejectShortInput(t *testing.T) {
	for name, f := range map[string]func(){
		"dot":   func() { dotRows(make([]float32, 2), make([]float32, 9), 5, make([]float32, 5)) },
		"accum": func() { accumRows(make([]float32, 5), make([]float32, 9), 5, make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic for a short w", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkDotRows times dotRows on stories260K's projection shapes
// ([rows, n] weight times [n]) and its lm_head: GFLOP/s.
func BenchmarkDotRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sh := range [][2]int{{64, 64}, {172, 64}, {64, 172}, {512, 64}} {
		rows, n := sh[0], sh[1]
		w, x, y := guarded(rng, rows, n, n), guarded(rng, 1, n, n), make([]float32, rows)
		for _, impl := range kernelImpls {
			b.Run(fmt.Sprintf("%dx%d/%s", rows, n, impl.name), func(b *testing.B) {
				for range b.N {
					impl.dot(y, w, n, x)
				}
				b.ReportMetric(2*float64(rows*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSoftmaxAgainstFloat64: softmax(scale·s) for lengths of kernelLengths
// with scores spread so that exponents reach the float32 underflow, against
// float64: each probability within (8+n+|x-m|)·2⁻²⁴ relative (2 ulp = 4u
// for the exponential, the float32 sum's γₙ, the reciprocal and the
// product, and the rounding of x-m, which the exponential turns into a
// relative error of |x-m|·u) or 1e-37 absolute where it is (sub)normal-tiny;
// the element after s stays.
func TestSoftmaxAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	impls := map[string]func([]float32, float32){"go": softmaxGo, "dispatch": softmaxKernel}
	for name, f := range impls {
		for _, n := range kernelLengths[1:] {
			for _, spread := range []float64{1, 30, 200} {
				s := make([]float32, n+1)
				for i := range n {
					s[i] = float32(spread * rng.NormFloat64())
				}
				s[n] = 42
				const scale = 0.35355339 // 1/sqrt(8)
				want := make([]float64, n)
				m := math.Inf(-1)
				for i := range n {
					want[i] = float64(s[i] * scale) // the scaled score rounds to float32 first
					m = math.Max(m, want[i])
				}
				sum := 0.0
				tol := make([]float64, n)
				for i := range want {
					tol[i] = (8 + float64(n) + m - want[i]) * 0x1p-24
					want[i] = math.Exp(want[i] - m)
					sum += want[i]
				}
				f(s[:n], scale)
				for i := range n {
					w := want[i] / sum
					if d := math.Abs(float64(s[i]) - w); !(d <= tol[i]*w || d <= 1e-37) {
						t.Fatalf("%s: n %d spread %v: p[%d] = %v, want %v (relative error %.3g)", name, n, spread, i, s[i], w, d/w)
					}
				}
				if s[n] != 42 {
					t.Fatalf("%s: n %d: wrote past s", name, n)
				}
			}
		}
	}
}

// TestSoftmaxNaN: one NaN score makes the whole row NaN (as PyTorch's
// softmax); -Inf scores get probability 0.
func TestSoftmaxNaN(t *testing.T) {
	impls := map[string]func([]float32, float32){"go": softmaxGo, "dispatch": softmaxKernel}
	for name, f := range impls {
		for _, n := range []int{3, 8, 11} {
			s := make([]float32, n)
			s[n-1] = float32(math.NaN())
			f(s, 1)
			for i, v := range s {
				if !math.IsNaN(float64(v)) {
					t.Fatalf("%s: n %d: p[%d] = %v with a NaN score", name, n, i, v)
				}
			}
			s = make([]float32, n) // zeros: uniform 1/(n-1) but for one -Inf
			s[n/2] = float32(math.Inf(-1))
			f(s, 1)
			for i, v := range s {
				want := float32(1 / float64(n-1))
				if i == n/2 {
					want = 0
				}
				if !(math.Abs(float64(v-want)) <= 1e-7) {
					t.Fatalf("%s: n %d: p[%d] = %v, want %v", name, n, i, v, want)
				}
			}
		}
	}
}

// BenchmarkSoftmax times a softmax over 256 scores (stories260K's longest
// context): ns per score.
func BenchmarkSoftmax(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	s := guarded(rng, 1, 256, 256)
	for name, f := range map[string]func([]float32, float32){"go": softmaxGo, "dispatch": softmaxKernel} {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				f(s, 1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/256, "ns/score")
		})
	}
}

// TestSiluMulAgainstFloat64: silu(g)·u for lengths of kernelLengths with g
// spread over ±100 (through e^-x overflow and underflow), against float64
// x/(1+e^-x)·u: within 10·2⁻²⁴ relative (2 ulp = 4u for the exponential,
// one rounding each for the product, the sum, the division and the
// multiply by u, and slack) or 1e-35·|u| absolute (below x = -87.33 the
// float32 exponential underflows to 0, where |silu(x)| <= 87.33·e^-87.33
// < 1.1e-36); the element after y stays.
func TestSiluMulAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	impls := map[string]func(y, g, u []float32){"go": siluMulGo, "dispatch": siluMulKernel}
	for name, f := range impls {
		for _, n := range kernelLengths[1:] {
			g, u, y := make([]float32, n), make([]float32, n), make([]float32, n+1)
			for i := range n {
				g[i] = float32(30 * rng.NormFloat64())
				u[i] = float32(rng.NormFloat64())
			}
			g[0] = []float32{0, -100, 100, -88.5, 89}[n%5]
			y[n] = 42
			f(y[:n], g, u)
			for i := range n {
				x := float64(g[i])
				want := x / (1 + math.Exp(-x)) * float64(u[i])
				if d := math.Abs(float64(y[i]) - want); !(d <= 10*0x1p-24*math.Abs(want) || d <= 1e-35*math.Abs(float64(u[i]))) {
					t.Fatalf("%s: n %d: silu(%v)·%v = %v, want %v", name, n, g[i], u[i], y[i], want)
				}
			}
			if y[n] != 42 {
				t.Fatalf("%s: n %d: wrote past y", name, n)
			}
		}
	}
}

// TestSiluMulSpecial: silu(+Inf) = +Inf, silu(-Inf) = NaN (−Inf/Inf, as
// PyTorch), silu(NaN) = NaN, silu(-0) = -0, each times 1.
func TestSiluMulSpecial(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	g := []float32{inf, -inf, nan, float32(math.Copysign(0, -1))}
	impls := map[string]func(y, g, u []float32){"go": siluMulGo, "dispatch": siluMulKernel}
	for name, f := range impls {
		y := make([]float32, len(g))
		f(y, g, []float32{1, 1, 1, 1})
		if !math.IsInf(float64(y[0]), 1) || !math.IsNaN(float64(y[1])) || !math.IsNaN(float64(y[2])) || y[3] != 0 || !math.Signbit(float64(y[3])) {
			t.Fatalf("%s: silu of [+Inf -Inf NaN -0] = %v", name, y)
		}
	}
}
