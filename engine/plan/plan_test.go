package plan_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	_ "hsdb/engine/arch" // registers the architectures
	"hsdb/engine/model"
	"hsdb/engine/plan"
	"hsdb/engine/tensor"
)

// tinyV3 is a DeepSeek-V3-architecture config small enough to count by
// hand: MLA (4 heads, q_lora 32, kv_lora 16, qk_nope 8, qk_rope 4, v 8),
// layer 0 dense (intermediate 64), layer 1 MoE (4 experts of 32, 1 shared,
// top-2), vocabulary 128, hidden 64, bf16.
const tinyV3 = `{"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 128, "hidden_size": 64,
"intermediate_size": 64, "moe_intermediate_size": 32, "num_hidden_layers": 2, "first_k_dense_replace": 1, "num_attention_heads": 4,
"n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "q_lora_rank": 32,
"kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8, "max_position_embeddings": 64,
"torch_dtype": "bfloat16"}`

// blockQuant is a test scheme: every 2-D weight whose name holds "proj" is
// stored as one byte per element plus a float32 scale per 16×16 block (the
// shape of DeepSeek's fp8 at a small block); with a checkpoint, exactly the
// weights stored as fp8.
type blockQuant struct{}

func (blockQuant) String() string { return "test block quantization" }
func (blockQuant) Load(model.WeightSource, string, int, int) (*tensor.Quantized, error) {
	return nil, nil
}
func (blockQuant) Check(model.WeightSource, string, int, int) error { return nil }
func (blockQuant) Stored(src model.WeightSource, name string) []string {
	if dt, _, ok := src.Meta(name); ok && dt == tensor.F8E4M3 {
		return []string{name, name + "_scale_inv"}
	}
	return nil
}
func (blockQuant) Planned(name string, out, in int) (int64, bool) {
	if !strings.Contains(name, "proj") {
		return 0, false
	}
	return int64(out*in + (out+15)/16*((in+15)/16)*4), true
}

func (blockQuant) Layout(name string) model.QuantLayout {
	return model.QuantLayout{Format: tensor.QuantFP8Block, Block: [2]int{16, 16}, Scale: name + "_scale_inv"}
}

// quantizeAll is blockQuant that says yes to every weight name, as a
// scheme that trusts its caller to ask only about linear layers does
// (compressed-tensors' "Linear" target).
type quantizeAll struct{ blockQuant }

func (quantizeAll) Planned(name string, out, in int) (int64, bool) {
	return int64(out*in + (out+15)/16*((in+15)/16)*4), true
}

func tree(t *testing.T, cfgJSON string, world int, ep bool) (*model.Tree, *model.Dims) {
	t.Helper()
	cfg, _, err := model.ParseConfig([]byte(cfgJSON))
	if err != nil {
		t.Fatal(err)
	}
	if ep {
		if err := cfg.(model.ExpertParallel).SetExpertParallel(true); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(world); err != nil {
		t.Fatal(err)
	}
	return cfg.Tree(world), cfg.Dims()
}

// TestPlanTinyV3: tinyV3 at --tp 2, by hand (bytes per rank; Q(out, in) =
// out·in + 4·⌈out/16⌉·⌈in/16⌉ for a rank's shard):
//
//	embed_tokens, lm_head: vocab 128 → 64 rows per rank, 2 × 64·64·2 = 16384; norm 128
//	per layer: norms 2·64·2 = 256, q_a_layernorm 64, kv_a_layernorm 32;
//	  q_a Q(32,64) = 2080, kv_a Q(20,64) = 1312, kv_b Q(32,16) = 520,
//	  o Q(64,16) = 1040 → 4952 quantized; q_b's shard, rows 0:24 or 24:48
//	  of 16-row blocks, does not fall on whole blocks: the loader
//	  dequantizes it to float32 (model.Loader.Linear), 24·32·4 = 3072
//	  (not Q(24,32) = 784) → 8376
//	layer 0 MLP: gate, up Q(32,64) = 2080, down Q(64,32) = 2080 → 6240
//	layer 1 MoE: gate.weight 4·64·2 = 512, bias 4·4 = 16, 4 experts + 1
//	  shared of gate, up Q(16,64) = 1040 and down Q(64,16) = 1040 → 15600
//	total 16384 + 128 + 2·8376 + 6240 + 512 + 16 + 15600 = 55632,
//	quantized 2·4952 + 6240 + 15600 = 31744.
//
// Under --ep each rank holds 2 whole experts (Q(32,64) + Q(32,64) +
// Q(64,32) = 6240 each), the same 12480 as 4 half experts. Dequantized to
// float32 (the CPU backend), the 32768 quantized elements per rank take 4
// bytes each: 17744 dense + 131072 = 148816.
//
// Activations (T = 10 tokens, bf16, rank of 2): always 3·T·64·2 = 3840;
// attention (2 heads on the rank of qk 8+4 = 12, v 8): q_c and its norm
// 32+32, kv_a and its parts 20+20, c_kv 16, q 24, kv_b 2·(8+8) = 32, q_pe
// 2·4 = 8, k_pe 4, q rebuilt 24, the latent row 20, the context's keys 24
// and values 2·8 = 16, attn_out 16, o_proj 64+64: T·2·416 = 8320 plus
// scores 2·T·T·(4+2) = 1200 = 9520; dense MLP 3·T·32·2 + 2·T·64·2 =
// 4480; MoE router 2·T·4·4 = 320, rows 2·T·2·64·2 = 5120, experts
// 3·T·2·16·2 = 1920, combine 2·T·64·2 = 2560, shared 3·T·16·2 + T·64·2 =
// 2240 → 12160. Kept quantized (the CUDA backend), each layer adds the
// widening scratch of its largest quantized linear outside the routed
// experts, q_a's (or layer 0's gate's) [32, 64] in bf16: 32·64·2 = 4096
// (q_b's shard is dense), and layer 1, whose routed experts are
// quantized, the MoE input's permuted copy T·64·2 = 1280. Peak: layer 1,
// 3840 + 12160 + 4096 + 1280 = 21376; under --ep the experts hold 32 rows
// each, 3840 instead of 1920: 23296. With both layers dense the attention
// is the peak: 3840 + 9520 + 4096 = 17456. KV: the
// capacity for T = 10 is 16 rows (16 ≥ 10), 2 layers · 16 · (16 + 4) · 2
// = 1280.
//
// With W8A8 (--w8a8) a quantized linear quantizes its [T, in] input to
// fp8 instead, the widest of them (in = 64: q_a, kv_a, gate, up) T·64 =
// 640 bytes with its scales T·1·4 = 40, and cuBLASLt takes up to 32 MiB
// of workspace: 33554432 + 680 = 33555112 in place of the 4096 widened;
// layer 1 peaks at 3840 + 12160 + 33555112 + 1280 = 33572392.
func TestPlanTinyV3(t *testing.T) {
	for _, ep := range []bool{false, true} {
		tr, d := tree(t, tinyV3, 2, ep)
		p, err := plan.New(tr, d, plan.Options{World: 2, Quant: blockQuant{}, Act: tensor.BF16, Tokens: 10, DeviceBytes: 21376 + 1280 + 55632})
		if err != nil {
			t.Fatal(err)
		}
		act := int64(21376)
		if ep {
			act = 23296
		}
		if len(p.Ranks) != 2 {
			t.Fatalf("ep=%v: %d ranks, want 2", ep, len(p.Ranks))
		}
		for _, r := range p.Ranks {
			if r.Weights != 55632 || r.QuantizedWeights != 31744 || r.KV != 1280 || r.Activations != act || r.Total != 55632+1280+act {
				t.Errorf("ep=%v rank %d: %+v, want weights 55632 (31744 quantized), KV 1280, activations %d", ep, r.Rank, r, act)
			}
		}
		if p.Fits == ep || (p.Check() == nil) == ep {
			t.Errorf("ep=%v: fits %v, check %v with a device of %d", ep, p.Fits, p.Check(), p.DeviceBytes)
		}
	}
	tr, d := tree(t, tinyV3, 2, false)
	p, err := plan.New(tr, d, plan.Options{World: 2, Quant: blockQuant{}, Act: tensor.BF16, Tokens: 10, W8A8: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Ranks {
		if r.Activations != 33572392 {
			t.Errorf("w8a8: rank %d activations %d, want 33572392", r.Rank, r.Activations)
		}
	}
	dense := strings.Replace(tinyV3, `"first_k_dense_replace": 1`, `"first_k_dense_replace": 2`, 1)
	tr, d = tree(t, dense, 2, false)
	p, err = plan.New(tr, d, plan.Options{World: 2, Quant: blockQuant{}, Act: tensor.BF16, Tokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Ranks {
		if r.KV != 1280 || r.Activations != 17456 {
			t.Errorf("all dense: rank %d KV %d, activations %d; want 1280, 17456", r.Rank, r.KV, r.Activations)
		}
	}
	// Only linear layers are asked: embeddings, LM head and router stay
	// dense under a scheme that would quantize anything.
	tr, d = tree(t, tinyV3, 2, false)
	p, err = plan.New(tr, d, plan.Options{World: 2, Quant: quantizeAll{}})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Ranks[0]; r.Weights != 55632 || r.QuantizedWeights != 31744 {
		t.Errorf("a scheme quantizing every name: %+v, want 55632 (31744 quantized)", r)
	}
	p, err = plan.New(tr, d, plan.Options{World: 2, Quant: blockQuant{}, Dequantize: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Weights(); w[0] != 148816 || w[1] != 148816 {
		t.Errorf("dequantized: %v, want 148816 per rank", w)
	}
	// Dequantized on load nothing is widened during a step: the stage's
	// peak alone, 16000.
	p, err = plan.New(tr, d, plan.Options{World: 2, Quant: blockQuant{}, Dequantize: true, Act: tensor.BF16, Tokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Ranks {
		if r.Activations != 16000 {
			t.Errorf("dequantized: rank %d activations %d, want 16000", r.Rank, r.Activations)
		}
	}
}

// TestPlanLlamaGQA: testdata/hf/llama (3 layers, 8 heads and 2 kv heads of
// 12, hidden 96, intermediate 160, float32) at --tp 2, T = 10, by hand:
// KV 3 · 16 · 2 · 12 · 4 = 4608 (one kv head per rank, a capacity of 16
// rows for 10 tokens); activations
// 3·T·96·4 = 11520 + attention T·4·(48+12+12+48+12+48+96+96) = 14880 +
// scores 4·T·T·8 = 3200 (the MLP, 3·T·80·4 + 2·T·96·4 = 17280, is less) =
// 29600.
func TestPlanLlamaGQA(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, d := tree(t, string(raw), 2, false)
	p, err := plan.New(tr, d, plan.Options{World: 2, Tokens: 10, Act: plan.ActivationDType(tensor.Invalid, d)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Ranks) != 2 {
		t.Fatalf("%d ranks, want 2", len(p.Ranks))
	}
	for _, r := range p.Ranks {
		if r.KV != 4608 || r.Activations != 29600 {
			t.Errorf("rank %d: KV %d, activations %d; want 4608, 29600", r.Rank, r.KV, r.Activations)
		}
	}
	if !p.Fits || p.DeviceBytes != 0 {
		t.Errorf("no device memory given: fits %v", p.Fits)
	}
}

// TestPlanCheckpointDTypes: with a checkpoint, a weight counts as quantized
// only where the checkpoint stores it so (Quant.Stored), under the plain or
// a wrapper's language_model. names; the rest at their stored dtype.
func TestPlanCheckpointDTypes(t *testing.T) {
	tr, d := tree(t, tinyV3, 1, false)
	src := &model.MapSource{Name: "ckpt", Tensors: map[string]*tensor.Tensor{}}
	for _, p := range tr.Params() {
		dt := tensor.BF16
		if p.Name == "model.layers.0.self_attn.q_a_proj.weight" {
			dt = tensor.F8E4M3
		}
		src.Tensors["language_model."+p.Name] = tensor.New(dt, p.Shape...)
	}
	p, err := plan.New(tr, d, plan.Options{World: 1, Quant: blockQuant{}, Src: src})
	if err != nil {
		t.Fatal(err)
	}
	// One rank holds everything: 128·64 elements twice (embedding, head),
	// every other bf16 parameter, and q_a of layer 0 as Q(32, 64) = 2080.
	var dense int64
	for _, q := range tr.Params() {
		if q.Name != "model.layers.0.self_attn.q_a_proj.weight" {
			n := q.Numel() * 2
			if strings.HasSuffix(q.Name, "e_score_correction_bias") {
				n = q.Numel() * 4
			}
			dense += n
		}
	}
	if r := p.Ranks[0]; r.QuantizedWeights != 2080 || r.Weights != dense+2080 {
		t.Errorf("weights %d (quantized %d), want %d (2080)", r.Weights, r.QuantizedWeights, dense+2080)
	}
}

// TestCheckDevices: each GPU must hold the ranks placed on it; the error
// names the GPU short of most, its ranks and the shortfall (1300 MiB =
// 1.2695 GiB, "1.27 GiB" to three digits; 1300 - 1024 = 276 MiB short).
func TestCheckDevices(t *testing.T) {
	p := &plan.Plan{Ranks: []plan.Rank{{Rank: 0, Total: 600 << 20}, {Rank: 1, Total: 600 << 20}, {Rank: 2, Total: 100 << 20}}}
	if err := p.CheckDevices([]plan.DeviceMemory{{"cuda:0", []int{0}, 1 << 30}, {"cuda:1", []int{1, 2}, 1 << 30}}); err != nil {
		t.Errorf("fits: %v", err)
	}
	err := p.CheckDevices([]plan.DeviceMemory{{"cuda:0", []int{0, 1, 2}, 1 << 30}})
	if !errors.Is(err, plan.ErrMemory) || !strings.Contains(err.Error(),
		"cuda:0 has 1 GiB free but the 3 ranks on it need 1.27 GiB (rank 0 600 MiB, rank 1 600 MiB, rank 2 100 MiB): 276 MiB short") {
		t.Errorf("err = %v", err)
	}
	err = p.CheckDevices([]plan.DeviceMemory{{"cuda:0", []int{0}, 500 << 20}, {"cuda:1", []int{1}, 100 << 20}, {"cuda:2", []int{2}, 1 << 30}})
	if !errors.Is(err, plan.ErrMemory) || !strings.Contains(err.Error(), "cuda:1 has 100 MiB free but rank 1 needs 600 MiB: 500 MiB short") {
		t.Errorf("err = %v", err)
	}
}
