package repl

import (
	"testing"

	"hsdb/engine"
	"hsdb/engine/tensor"
)

// TestInfoModelRouterBiasKeptF32: with --dtype bf16 `info model` said
// "weights kept as bf16 129 tensors" for the DeepSeek-V3 fixture (f32
// checkpoint), but the MoE router's e_score_correction_bias is read to
// the host as float32 whatever --dtype (as vLLM keeps it): one per MoE
// layer, 3 here (4 layers, first_k_dense_replace 1), so 126 bf16 and 3
// f32.
func TestInfoModelRouterBiasKeptF32(t *testing.T) {
	o := engine.Options{DType: tensor.BF16}
	f := openFake(t, "../testdata/hf/deepseek_v3", o)
	f.s.Options = o
	f.AssertExec("info model", "weights stored     f32 129 tensors\n", "weights kept as    bf16 126 tensors, f32 3 tensors (--dtype bf16)\n")
}
