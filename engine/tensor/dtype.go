package tensor

import (
	"fmt"
	"strings"
)

// DType is the element type of a tensor's storage. Compute on the CPU is
// always float32; narrower types are storage formats that are widened on use.
// The names follow the safetensors header ("F32", "BF16", ...) and PyTorch
// (torch.float32, torch.bfloat16, ...).
type DType uint8

// The dtypes hsdb reads and writes. F8E4M3 is torch.float8_e4m3fn (OCP FP8,
// no infinities, one NaN pattern), as DeepSeek-V3 checkpoints store weights.
const (
	Invalid DType = iota
	F32
	F16
	BF16
	F64
	F8E4M3
	I64
	I32
	I16
	I8
	U8
	Bool
)

var dtypeInfo = [...]struct {
	st, short string
	size      int
}{
	Invalid: {"", "invalid", 0},
	F32:     {"F32", "f32", 4},
	F16:     {"F16", "f16", 2},
	BF16:    {"BF16", "bf16", 2},
	F64:     {"F64", "f64", 8},
	F8E4M3:  {"F8_E4M3", "fp8_e4m3", 1},
	I64:     {"I64", "i64", 8},
	I32:     {"I32", "i32", 4},
	I16:     {"I16", "i16", 2},
	I8:      {"I8", "i8", 1},
	U8:      {"U8", "u8", 1},
	Bool:    {"BOOL", "bool", 1},
}

// Size is the number of bytes one element occupies (0 for Invalid).
func (d DType) Size() int {
	if int(d) >= len(dtypeInfo) {
		return 0
	}
	return dtypeInfo[d].size
}

// String returns the short lower-case name used in hsdb's output and flags
// ("f32", "bf16", "f16", "fp8_e4m3", "i64", ...).
func (d DType) String() string {
	if int(d) >= len(dtypeInfo) {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].short
}

// SafetensorsName returns the dtype's name in a safetensors header ("F32",
// "BF16", "F8_E4M3", ...), or "" for Invalid.
func (d DType) SafetensorsName() string {
	if int(d) >= len(dtypeInfo) {
		return ""
	}
	return dtypeInfo[d].st
}

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool {
	switch d {
	case F32, F16, BF16, F64, F8E4M3:
		return true
	}
	return false
}

// InfBits returns the bit pattern of +Inf in float dtype d (bf16, f16,
// f32, f64: the exponent field all ones, IEEE-754 and bfloat16 alike; a
// magnitude with these bits set is Inf or NaN) and true, or 0 and false
// for any other dtype (fp8 e4m3fn has no Inf).
func (d DType) InfBits() (uint64, bool) {
	switch d {
	case BF16:
		return 0x7F80, true
	case F16:
		return 0x7C00, true
	case F32:
		return 0x7F800000, true
	case F64:
		return 0x7FF0000000000000, true
	}
	return 0, false
}

// FromSafetensors maps a safetensors header dtype string to a DType. It
// returns ok=false for a name hsdb does not know (the loader then reports the
// file and tensor).
func FromSafetensors(name string) (DType, bool) {
	for i, inf := range dtypeInfo {
		if i != 0 && inf.st == name {
			return DType(i), true
		}
	}
	return Invalid, false
}

// ParseDType accepts the short names ("f32", "bf16", "f16", "fp8_e4m3", ...),
// the safetensors names ("F32", "BF16"), and PyTorch's ("float32",
// "bfloat16", "float16", "torch.float32", "half", "float"). It returns an
// error naming the accepted values for anything else.
func ParseDType(s string) (DType, error) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "torch.")
	switch n {
	case "f32", "float32", "float", "fp32":
		return F32, nil
	case "f16", "float16", "half", "fp16":
		return F16, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f64", "float64", "double":
		return F64, nil
	case "fp8_e4m3", "f8_e4m3", "float8_e4m3fn", "fp8":
		return F8E4M3, nil
	case "i64", "int64", "long":
		return I64, nil
	case "i32", "int32", "int":
		return I32, nil
	case "i16", "int16":
		return I16, nil
	case "i8", "int8":
		return I8, nil
	case "u8", "uint8":
		return U8, nil
	case "bool":
		return Bool, nil
	}
	return Invalid, fmt.Errorf("unknown dtype %q (want f32, bf16, f16, fp8_e4m3, i64, i32, i16, i8, u8 or bool)", s)
}

// FloatDTypeNames names, for messages, the spellings ParseFloatDType
// accepts.
const FloatDTypeNames = "f32, bf16 or f16 (also float32, fp32, float, bfloat16, float16, fp16, half; each also as torch.NAME; any case)"

// ParseFloatDType parses a dtype hsdb keeps weights or writes hidden
// states in: F32, BF16 or F16, spelled as ParseDType takes them (hsdb's
// short names, PyTorch's torch.bfloat16 / bfloat16 / float32 / float16 /
// half / float, the safetensors names F32, BF16, F16). It is the one
// parser of `dump --dtype`, `hsdb capture --save-dtype` and the model's
// --dtype. Error: the value quoted and FloatDTypeNames, for an unknown
// name and for another dtype (fp8_e4m3, i64, ...) alike.
func ParseFloatDType(s string) (DType, error) {
	dt, err := ParseDType(s)
	if err != nil || (dt != F32 && dt != BF16 && dt != F16) {
		return Invalid, fmt.Errorf("%q: want %s", s, FloatDTypeNames)
	}
	return dt, nil
}
