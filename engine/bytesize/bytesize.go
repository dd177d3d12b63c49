package bytesize

import (
	"strconv"
	"strings"
)

// Binary writes n bytes in B, KiB, MiB, GiB, TiB, PiB or EiB (powers of
// 1024) with three significant digits: 2621440 → "2.5 MiB", 1073741824 →
// "1 GiB", 900 → "900 B". A negative n is written with a minus sign.
func Binary(n int64) string {
	return format(n, 1024, []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"})
}

// Decimal writes n bytes in B, kB, MB, GB, TB, PB or EB (powers of 1000)
// with three significant digits: 84_300_000_000 → "84.3 GB", 1_500_000 →
// "1.5 MB", 999 → "999 B".
func Decimal(n int64) string { return format(n, 1000, []string{"kB", "MB", "GB", "TB", "PB", "EB"}) }

// format writes n in the largest unit (units[i] = base^(i+1) bytes) that
// leaves a value of at least 1 after rounding to three significant digits
// (so 1048575 B is "1 MiB", not "1024 KiB"); below base, exact bytes.
// Trailing zeros of the fraction are dropped.
func format(n int64, base float64, units []string) string {
	sign := ""
	u := uint64(n)
	if n < 0 {
		sign, u = "-", uint64(-(n+1))+1 // -MinInt64 does not fit an int64
	}
	if float64(u) < base {
		return sign + strconv.FormatUint(u, 10) + " B"
	}
	v := float64(u)
	i := -1
	for i < len(units)-1 && round3(v) >= base {
		v /= base
		i++
	}
	return sign + text3(v) + " " + units[i]
}

// decimals is how many digits after the point give v (≥ 1) three
// significant digits: 2 below 10, 1 below 100, else 0.
func decimals(v float64) int {
	switch {
	case v < 10:
		return 2
	case v < 100:
		return 1
	}
	return 0
}

// round3 is v rounded to three significant digits (for v ≥ 1), the value
// text3 writes: what decides the unit.
func round3(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', decimals(v), 64), 64)
	return f
}

// text3 writes v (≥ 1) with three significant digits, trailing zeros of
// the fraction and a bare point dropped: 2.50 → "2.5", 1.00 → "1".
func text3(v float64) string {
	s := strconv.FormatFloat(v, 'f', decimals(v), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
