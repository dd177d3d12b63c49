package engine_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// dsV3Rank is a hand count of one rank's weight bytes of DeepSeek-V3
// (testdata/configs/deepseek-v3/config.json) at --tp 8 without --ep, from
// the model's structure as vLLM shards it (deepseek_v2.py): quant(out, in)
// is the bytes of one rank's [out, in] shard of a linear weight the
// checkpoint quantizes, dense(n) the bytes of n elements at bf16.
//
//	vocab 129280 = 8 × 16160 (a multiple of 64: no padding)
//	embed_tokens, lm_head   2 × dense(16160 × 7168)       vocab-parallel
//	norm                    dense(7168)
//	61 layers:
//	  input/post_attention_layernorm  2 × dense(7168)
//	  q_a_proj                quant(1536, 7168)            replicated
//	  kv_a_proj_with_mqa      quant(512+64, 7168)          replicated
//	  q_a_layernorm, kv_a_layernorm  dense(1536) + dense(512)
//	  q_b_proj                quant(128·192/8, 1536)       heads split
//	  kv_b_proj               quant(128·256/8, 512)        heads split
//	  o_proj                  quant(7168, 128·128/8)       heads split (input)
//	3 dense layers (first_k_dense_replace): gate, up quant(18432/8, 7168), down quant(7168, 18432/8)
//	58 MoE layers:
//	  gate.weight             dense(256 × 7168)            replicated, never quantized
//	  e_score_correction_bias 256 × 4 bytes (float32)
//	  256 routed experts + 1 shared expert, each: gate, up quant(2048/8, 7168), down quant(7168, 2048/8)
func dsV3Rank(quant func(out, in int64) int64, dense func(n int64) int64) int64 {
	perLayer := 2*dense(7168) + quant(1536, 7168) + quant(576, 7168) + dense(1536) + dense(512) +
		quant(128*192/8, 1536) + quant(128*256/8, 512) + quant(7168, 128*128/8)
	denseMLP := 2*quant(18432/8, 7168) + quant(7168, 18432/8)
	expert := 2*quant(2048/8, 7168) + quant(7168, 2048/8)
	moe := dense(256*7168) + 256*4 + 257*expert
	return 2*dense(16160*7168) + dense(7168) + 61*perLayer + 3*denseMLP + 58*moe
}

func bf16Bytes(n int64) int64 { return 2 * n }

// fp8Block is DeepSeek-V3's storage of a [out, in] weight: one float8_e4m3fn
// byte per element and one float32 weight_scale_inv per 128×128 block.
func fp8Block(out, in int64) int64 { return out*in + (out+127)/128*((in+127)/128)*4 }

// withoutQuant writes DeepSeek-V3's config.json with its quantization_config
// removed (a bf16 checkpoint of the same model) into a temporary directory.
func withoutQuant(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/configs/deepseek-v3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, `"quantization_config"`)
	j := strings.Index(s, `"rms_norm_eps"`)
	if i < 0 || j < i {
		t.Fatal("config.json has no quantization_config before rms_norm_eps")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(s[:i]+s[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPlanDeepseekV3BF16: without its fp8 quantization DeepSeek-V3 needs
// dsV3Rank(bf16) bytes per rank at --tp 8, about 169.6 GB: more than an
// H200's 141 GiB, so the plan says it does not fit and names the rank and
// the shortfall.
func TestPlanDeepseekV3BF16(t *testing.T) {
	want := dsV3Rank(func(out, in int64) int64 { return 2 * out * in }, bf16Bytes)
	p, err := engine.PlanDir(withoutQuant(t), engine.PlanOptions{TP: 8, Tokens: 4096, DeviceBytes: 141 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ranks) != 8 {
		t.Fatalf("%d ranks, want 8", len(p.Ranks))
	}
	for _, r := range p.Ranks {
		if r.Weights != want || r.QuantizedWeights != 0 {
			t.Errorf("rank %d: weights %d (quantized %d), hand count %d", r.Rank, r.Weights, r.QuantizedWeights, want)
		}
	}
	if p.Fits {
		t.Error("bf16 DeepSeek-V3 fits 141 GiB per rank at --tp 8")
	}
	err = p.Check()
	if err == nil || !strings.Contains(err.Error(), "rank 0 needs") || !strings.Contains(err.Error(), "short") {
		t.Errorf("Check() = %v, want the rank and its shortfall", err)
	}
	if len(p.NotCounted) != 1 || !strings.Contains(p.NotCounted[0], "num_nextn_predict_layers 1") {
		t.Errorf("not counted: %q, want the MTP layer", p.NotCounted)
	}
}

// TestLoadRefusedPerDevice: on a GPU each rank must fit its own device.
// testdata/hf/llama (float32, vocabulary 101 tied, hidden 96, 3 layers, 8
// heads and 2 kv heads of 12, intermediate 160) at --tp 2 puts on each
// rank, by hand: embeddings 64·96·4 = 24576 (101 padded to 128), norm 384,
// and per layer norms 768, q 48·96·4 = 18432, k and v 2·12·96·4 = 9216, o
// 18432, gate and up 2·80·96·4 = 61440, down 30720: 139008 × 3 = 417024;
// 441984 bytes (431.625 KiB, "432 KiB" to three digits) in all. With 400
// KiB per device the load is refused before any device is opened (the cuda
// device is not even built in), naming the rank and the 32384 bytes it
// lacks (31.625 KiB: "31.6 KiB"; sizes were rounded to whole KiB, "32").
func TestLoadRefusedPerDevice(t *testing.T) {
	_, err := engine.Open("../testdata/hf/llama", engine.Options{TP: 2, Device: "cuda", MemoryLimit: 400 << 10})
	if !errors.Is(err, engine.ErrMemory) {
		t.Fatalf("err = %v, want ErrMemory", err)
	}
	for _, want := range []string{"rank 0 needs 432 KiB (weights 432 KiB", "its device has 400 KiB: 31.6 KiB short", "2 of 2 ranks"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	p, err := engine.PlanDir("../testdata/hf/llama", engine.PlanOptions{TP: 2})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Weights(); w[0] != 441984 || w[1] != 441984 || !p.Checkpoint {
		t.Errorf("plan with the checkpoint: weights %v (checkpoint %v), want 441984 per rank", w, p.Checkpoint)
	}
}

// TestPlanIndexOnly: a directory with config.json and the shard index but
// no shards (what a user has before the 700 GB download) plans as
// config.json says, and says it read no tensor headers.
func TestPlanIndexOnly(t *testing.T) {
	dir := withoutQuant(t)
	index := `{"metadata": {"total_size": 1}, "weight_map": {"model.embed_tokens.weight": "model-00001-of-00163.safetensors",
"lm_head.weight": "model-00163-of-00163.safetensors"}}`
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := engine.PlanDir(dir, engine.PlanOptions{TP: 8})
	if err != nil {
		t.Fatal(err)
	}
	if want := dsV3Rank(func(out, in int64) int64 { return 2 * out * in }, bf16Bytes); p.Ranks[0].Weights != want || p.Checkpoint {
		t.Errorf("weights %d (checkpoint %v), want the config-only %d", p.Ranks[0].Weights, p.Checkpoint, want)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "model-00001-of-00163.safetensors") {
		t.Errorf("notes %q, want the missing shard named", p.Notes)
	}
}

// TestPlanDeepseekV3FP8: DeepSeek-V3 as released (fp8 e4m3 with a float32
// scale per 128×128 block, testdata/configs/deepseek-v3, through
// engine/quant's scheme) at --tp 8 keeps dsV3Rank(fp8Block, bf16) bytes per
// rank, about 85.1 GB: within 80-88 GB and, with the KV cache and
// activations of 4096 tokens, within an H200's 141 GiB.
func TestPlanDeepseekV3FP8(t *testing.T) {
	want := dsV3Rank(fp8Block, bf16Bytes)
	dense := dsV3Rank(func(int64, int64) int64 { return 0 }, bf16Bytes)
	if !(want >= 80e9 && want <= 88e9) {
		t.Fatalf("hand count %d bytes per rank is outside 80-88 GB", want)
	}
	p, err := engine.PlanDir("../testdata/configs/deepseek-v3", engine.PlanOptions{TP: 8, Tokens: 4096, DeviceBytes: 141 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ranks) != 8 {
		t.Fatalf("%d ranks, want 8", len(p.Ranks))
	}
	for _, r := range p.Ranks {
		if r.Weights != want || r.QuantizedWeights != want-dense {
			t.Errorf("rank %d: weights %d (quantized %d), hand count %d (%d)", r.Rank, r.Weights, r.QuantizedWeights, want, want-dense)
		}
	}
	if !p.Fits || p.Check() != nil || p.DeviceBytes != 141<<30 {
		t.Errorf("fits %v (%v) for %d bytes per device", p.Fits, p.Check(), p.DeviceBytes)
	}
}

// TestPlanCheckpointBytes: at --tp 1 the plan of a checkpoint is the bytes
// its safetensors headers give for every tensor (data, fp8 weights and
// their float32 block scales, as the fixture script wrote them) plus
// vLLM's vocabulary padding: 101 rows padded to 128, 27 rows of hidden 96
// in float32 per table (two tables; one for llama's tied embeddings).
func TestPlanCheckpointBytes(t *testing.T) {
	for _, c := range []struct {
		dir    string
		tables int64
		quant  bool
	}{{"deepseek_v3_fp8", 2, true}, {"llama", 1, false}} {
		dir := "../testdata/hf/" + c.dir
		f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		var stored, fp8, fp8Data int64
		for _, n := range f.Names() {
			ti, _ := f.Info(n)
			stored += ti.Bytes()
			if ti.DType == tensor.F8E4M3 {
				sc, ok := f.Info(n + "_scale_inv")
				if !ok {
					t.Fatalf("%s: %s has no scale", c.dir, n)
				}
				fp8 += ti.Bytes() + sc.Bytes()
				fp8Data += ti.Bytes()
			}
		}
		f.Close()
		p, err := engine.PlanDir(dir, engine.PlanOptions{TP: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := p.Ranks[0]
		if want := stored + c.tables*27*96*4; r.Weights != want || r.QuantizedWeights != fp8 || !p.Checkpoint || (fp8 > 0) != c.quant {
			t.Errorf("%s: weights %d (quantized %d), the checkpoint holds %d (fp8 and scales %d) + padding", c.dir, r.Weights, r.QuantizedWeights, stored, fp8)
		}
		// On the CPU, which dequantizes on load, each fp8 byte becomes a
		// float32 and the scales are not kept.
		p, err = engine.PlanDir(dir, engine.PlanOptions{TP: 1, Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		if want := stored - fp8 + 4*fp8Data + c.tables*27*96*4; p.Ranks[0].Weights != want || p.Ranks[0].QuantizedWeights != 0 || p.Act != "f32" {
			t.Errorf("%s on the CPU: weights %d (quantized %d, activations %s), want %d", c.dir, p.Ranks[0].Weights, p.Ranks[0].QuantizedWeights, p.Act, want)
		}
	}
}

// kimiRank is a hand count of one rank's weight bytes of Kimi-K2.5
// (testdata/configs/kimi-k2.5, its text_config) at --tp 8: routed experts
// int4 (int4(out, in): 0.5 byte per weight packed in int32 words, a bf16
// scale per 32 inputs and the 8-byte int32 weight_shape), everything the
// ignore list names (attention, shared experts, the dense layer-0 MLP,
// lm_head) and the embeddings, norms and router in bf16.
//
//	vocab 163840 = 8 × 20480: embed_tokens, lm_head 2 × dense(20480 × 7168); norm dense(7168)
//	61 layers (64 heads, 8 per rank): norms 2 × dense(7168), q_a dense(1536 × 7168),
//	  kv_a dense(576 × 7168), q_a/kv_a_layernorm dense(1536) + dense(512),
//	  q_b dense(8·192 × 1536), kv_b dense(8·256 × 512), o dense(7168 × 8·128)
//	layer 0 (first_k_dense_replace 1): gate, up, down 3 × dense(18432/8 × 7168)
//	60 MoE layers: router dense(384 × 7168), bias 384 × 4 bytes, shared expert
//	  3 × dense(2048/8 × 7168), experts: tp — 384 × (2 int4(256, 7168) + int4(7168, 256));
//	  ep — 48 whole experts × (2 int4(2048, 7168) + int4(7168, 2048))
func kimiRank(ep bool) (total, quantized int64) {
	dense := bf16Bytes
	int4 := func(out, in int64) int64 { return out*((in+7)/8)*4 + out*((in+31)/32)*2 + 8 }
	experts := 384 * (2*int4(256, 7168) + int4(7168, 256))
	if ep {
		experts = 48 * (2*int4(2048, 7168) + int4(7168, 2048))
	}
	perLayer := 2*dense(7168) + dense(1536*7168) + dense(576*7168) + dense(1536) + dense(512) +
		dense(8*192*1536) + dense(8*256*512) + dense(7168*8*128)
	moe := dense(384*7168) + 384*4 + 3*dense(256*7168) + experts
	return 2*dense(20480*7168) + dense(7168) + 61*perLayer + 3*dense(2304*7168) + 60*moe, 60 * experts
}

// TestPlanKimiK25: Kimi-K2.5 as released (compressed-tensors int4 experts,
// the multimodal wrapper) fits 8 × 141 GiB at --tp 8, with and without
// --ep, at the hand count of kimiRank (about 76.2 GB per rank).
func TestPlanKimiK25(t *testing.T) {
	for _, ep := range []bool{false, true} {
		want, quantized := kimiRank(ep)
		p, err := engine.PlanDir("../testdata/configs/kimi-k2.5", engine.PlanOptions{TP: 8, EP: ep, Tokens: 4096, DeviceBytes: 141 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Ranks) != 8 {
			t.Fatalf("ep=%v: %d ranks, want 8", ep, len(p.Ranks))
		}
		for _, r := range p.Ranks {
			if r.Weights != want || r.QuantizedWeights != quantized {
				t.Errorf("ep=%v rank %d: weights %d (quantized %d), hand count %d (%d)", ep, r.Rank, r.Weights, r.QuantizedWeights, want, quantized)
			}
		}
		if !p.Fits || p.Skipped == "" || len(p.NotCounted) != 0 {
			t.Errorf("ep=%v: fits %v, skipped %q, not counted %q", ep, p.Fits, p.Skipped, p.NotCounted)
		}
	}
}
