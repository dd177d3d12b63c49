package tensor

import (
	"strings"
	"testing"
)

// floatSpellings are every spelling ParseFloatDType takes, with the dtype
// each names (hsdb's short names, PyTorch's names with and without
// "torch.", the safetensors names).
var floatSpellings = map[string]DType{
	"f32": F32, "fp32": F32, "float32": F32, "float": F32, "torch.float32": F32, "torch.float": F32, "F32": F32,
	"bf16": BF16, "bfloat16": BF16, "torch.bfloat16": BF16, "BF16": BF16,
	"f16": F16, "fp16": F16, "float16": F16, "half": F16, "torch.float16": F16, "torch.half": F16, "F16": F16,
}

// TestParseFloatDType: the one parser of `dump --dtype`, `hsdb capture
// --save-dtype` and the model's --dtype takes every spelling above and
// refuses the rest (other dtypes too) naming what it accepts.
func TestParseFloatDType(t *testing.T) {
	for s, want := range floatSpellings {
		if got, err := ParseFloatDType(s); err != nil || got != want {
			t.Errorf("ParseFloatDType(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"bfloat", "fp8", "i64", "float64", ""} {
		_, err := ParseFloatDType(s)
		if err == nil || !strings.Contains(err.Error(), FloatDTypeNames) {
			t.Errorf("ParseFloatDType(%q) = %v, want an error naming %s", s, err, FloatDTypeNames)
		}
	}
	for _, name := range []string{"f32", "bf16", "f16", "float32", "bfloat16", "float16", "half", "torch.NAME"} {
		if !strings.Contains(FloatDTypeNames, name) {
			t.Errorf("FloatDTypeNames %q lacks %s", FloatDTypeNames, name)
		}
	}
}
