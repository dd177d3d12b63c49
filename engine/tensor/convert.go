package tensor

import (
	"math"

	"github.com/x448/float16"
)

// BF16ToF32 widens a bfloat16 bit pattern: bfloat16 is the top 16 bits of an
// IEEE-754 binary32 (Google Brain's format, as torch.bfloat16), so widening is
// exact.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 narrows to bfloat16 with round-to-nearest-even, as PyTorch's
// float->bfloat16 cast does. NaN stays NaN (quiet), infinities stay infinite.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep sign, force a quiet mantissa bit
		return uint16(u>>16) | 0x0040
	}
	rounding := uint32(0x7fff) + (u>>16)&1
	return uint16((u + rounding) >> 16)
}

// F16ToF32 widens an IEEE-754 binary16 bit pattern (torch.float16), exactly.
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 narrows to IEEE-754 binary16 with round-to-nearest-even, as
// PyTorch's float->half cast does (overflow gives ±Inf).
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// fp8E4M3Table holds the float32 value of every float8_e4m3fn byte: 1 sign
// bit, 4 exponent bits (bias 7), 3 mantissa bits, no infinities, and
// S.1111.111 as NaN (the OCP 8-bit floating point spec, torch.float8_e4m3fn).
var fp8E4M3Table = func() (t [256]float32) {
	for i := range 256 {
		sign := float32(1)
		if i&0x80 != 0 {
			sign = -1
		}
		exp := (i >> 3) & 0xf
		man := i & 0x7
		switch {
		case exp == 0xf && man == 0x7:
			t[i] = float32(math.NaN())
		case exp == 0:
			t[i] = sign * float32(man) / 8 * float32(math.Ldexp(1, -6))
		default:
			t[i] = sign * (1 + float32(man)/8) * float32(math.Ldexp(1, exp-7))
		}
	}
	return t
}()

// FP8E4M3ToF32 widens one float8_e4m3fn byte to float32, exactly.
func FP8E4M3ToF32(b uint8) float32 { return fp8E4M3Table[b] }

// F32ToFP8E4M3 narrows to float8_e4m3fn with round-to-nearest-even, as
// PyTorch's cast (c10/util/Float8_e4m3fn.h) does: magnitudes from 480 up and
// NaN become NaN (0x7f/0xff); 448 is the largest finite value.
func F32ToFP8E4M3(f float32) uint8 {
	if f != f {
		return 0x7f
	}
	var sign uint8
	if math.Signbit(float64(f)) {
		sign = 0x80
		f = -f
	}
	if f >= 480 {
		return sign | 0x7f
	}
	// Search the 127 non-negative finite codes for the nearest, ties to even code.
	best, bestDiff := uint8(0), float32(math.Inf(1))
	for c := uint8(0); c <= 0x7e; c++ {
		d := fp8E4M3Table[c] - f
		if d < 0 {
			d = -d
		}
		if d < bestDiff || (d == bestDiff && c&1 == 0) {
			best, bestDiff = c, d
		}
	}
	return sign | best
}
