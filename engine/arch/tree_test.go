package arch_test

import (
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// TestTreeIsWhatEveryRankHolds: for every HF fixture and split, each rank's
// device holds exactly the shards the module tree gives it (the sum over
// parameters of RankShape(rank) × 4 bytes, the fixtures being float32 and
// fp8 weights dequantized to float32), so the tree and the loading, which
// both come from one build function, agree on every parameter's per-rank
// range, vocabulary padding and replicated kv heads included. (DeepSeek-V3's
// e_score_correction_bias is the one parameter the router keeps on the
// host.)
func TestTreeIsWhatEveryRankHolds(t *testing.T) {
	for _, name := range []string{"llama", "llama3", "mistral", "qwen2", "qwen3", "deepseek_v3", "deepseek_v2", "deepseek_v3_fp8"} {
		f := loadFixture(t, name)
		for _, o := range []engine.Options{{TP: 1}, {TP: 2}, {TP: 4}, {TP: 2, EP: true}} {
			e, err := engine.LoadSource(f.dir, f.config, &model.MapSource{Name: f.dir, Tensors: f.weights}, o)
			if err != nil {
				if o.EP && name[:4] != "deep" {
					continue // only the DeepSeek fixtures have routed experts
				}
				t.Fatalf("%s %s: %v", name, optName(o), err)
			}
			for r, got := range e.MemoryInUse() {
				var want int64
				for _, p := range e.Tree.Params() {
					if strings.HasSuffix(p.Name, ".e_score_correction_bias") {
						continue // the router keeps it on the host
					}
					want += int64(tensor.Numel(p.RankShape(r))) * 4
				}
				if got != want || want == 0 {
					t.Errorf("%s %s rank %d holds %d bytes, the tree gives it %d", name, optName(o), r, got, want)
				}
			}
		}
	}
}

// TestLlamaFP8: block-scaled fp8 is a property of the linear blocks, not of
// an architecture: the llama3 fixture with its q/o projections and MLP
// weights quantized to fp8 (32×32 blocks, as fp8Checkpoint derives them)
// gives, at every split, the logits of the float32 weights those fp8
// values and scales stand for; the load report names each fp8 weight.
func TestLlamaFP8(t *testing.T) {
	f := loadFixture(t, "llama3")
	q, deq, n := fp8Checkpoint(f.weights)
	cfgQ := strings.Replace(string(f.config), `"dtype": "float32"`, `"dtype": "float32", "quantization_config": {"quant_method": "fp8", "weight_block_size": [32, 32]}`, 1)
	if cfgQ == string(f.config) || n == 0 {
		t.Fatalf("fixture config not rewritten (%d weights quantized)", n)
	}
	for _, o := range []engine.Options{{TP: 1}, {TP: 2}, {TP: 4}} {
		eq := load(t, cfgQ, &model.MapSource{Name: "fp8", Tensors: q}, o)
		lq, err := eq.Prefill(f.seqs, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := load(t, string(f.config), &model.MapSource{Name: "deq", Tensors: deq}, o).Prefill(f.seqs, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(lq.Values.F32(), ld.Values.F32(), 1e-6); err != nil {
			t.Errorf("%s: fp8 vs dequantized logits: %v", optName(o), err)
		}
		if len(eq.Report.Dequantized) != n || eq.Report.Format != "fp8 e4m3, 32×32 blocks" {
			t.Errorf("%s: report lists %d fp8 weights (%q), the checkpoint has %d", optName(o), len(eq.Report.Dequantized), eq.Report.Format, n)
		}
	}
}

// TestUnknownQuantMethod: a quantization_config hsdb cannot read stops the
// load naming the field, before any weight is read.
func TestUnknownQuantMethod(t *testing.T) {
	f := loadFixture(t, "llama3")
	cfg := strings.Replace(string(f.config), `"dtype": "float32"`, `"dtype": "float32", "quantization_config": {"quant_method": "gptq", "bits": 4}`, 1)
	src := newCounting("llama3", f.weights)
	_, err := engine.LoadSource("test", []byte(cfg), src, engine.Options{TP: 1})
	if err == nil || !strings.Contains(err.Error(), `quantization_config: quant_method "gptq" is not supported`) || src.bytes.Load() != 0 {
		t.Errorf("err = %v, %d bytes read", err, src.bytes.Load())
	}
}
