package arch_test

import (
	"errors"
	"fmt"
	"hsdb/engine/enginetest"
	"slices"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

// Invariants of the DeepSeek architectures that need no reference: every
// split gives the single-rank result, sites come in tree order with the
// shapes the config implies, decode equals prefill.

var deepseekCases = []struct {
	name, cfg string
	seed      uint64
}{{"v3", v3Config, 11}, {"v2", v2Config, 12}}

// TestDeepseekSplitsEqualTP1: --tp 2 and 4 (experts tensor-parallel) and
// --ep over 2 and 4 ranks give every layer's stream and the logits of --tp
// 1 within float32 rounding; replicated tensors agree on every rank and the
// router picks the same experts in every split.
func TestDeepseekSplitsEqualTP1(t *testing.T) {
	for _, tc := range deepseekCases {
		t.Run(tc.name, func(t *testing.T) {
			w := randWeights(parseCfg(t, tc.cfg), tc.seed, 0.05)
			src := &model.MapSource{Name: tc.name, Tensors: w}
			want := func(s *model.Site) bool { return enginetest.LayerOutputs(s) || strings.HasSuffix(s.Path, ".mlp.gate") }
			names := []string{"stream", "topk_ids"}
			ref := &enginetest.Recorder{Sites: want, Names: names}
			l1, err := load(t, tc.cfg, src, engine.Options{TP: 1}).Prefill(prompts, ref, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []engine.Options{{TP: 2}, {TP: 4}, {TP: 2, EP: true}, {TP: 4, EP: true}} {
				rec := &enginetest.Recorder{Sites: want, Names: names}
				ln, err := load(t, tc.cfg, src, o).Prefill(prompts, rec, true)
				if err != nil {
					t.Fatalf("%+v: %v", o, err)
				}
				if len(rec.Got) != len(ref.Got) || len(ref.Got) == 0 {
					t.Fatalf("%+v: %d recorded tensors, tp 1 has %d", o, len(rec.Got), len(ref.Got))
				}
				for k, wantT := range ref.Got {
					got := rec.Got[k]
					if len(got) != o.TP {
						t.Fatalf("%+v: %s seen on %d ranks", o, k, len(got))
					}
					for r, g := range got {
						if strings.HasSuffix(k, "/topk_ids") {
							if !equalInts(g, wantT[0]) {
								t.Errorf("%+v rank %d %s: experts differ from tp 1", o, r, k)
							}
							continue
						}
						if err := enginetest.CheckClose(g.F32(), wantT[0].F32(), 1e-5); err != nil {
							t.Errorf("%+v rank %d %s: rel diff %v", o, r, k, err)
						}
					}
				}
				if err := enginetest.CheckClose(ln.Values.F32(), l1.Values.F32(), 1e-5); err != nil {
					t.Errorf("%+v logits rel diff %v", o, err)
				}
			}
		})
	}
}

func equalInts(a, b *tensor.Tensor) bool {
	if a.Numel() != b.Numel() {
		return false
	}
	for i := range a.Numel() {
		if a.Int(i) != b.Int(i) {
			return false
		}
	}
	return true
}

// TestDeepseekSitesInTreeOrder: a step visits every site of the tree once,
// in post-order. Counted by hand: model, embed_tokens, norm, lm_head = 4;
// per layer: the layer and its 2 norms = 3; self_attn with fused_qkv_a_proj,
// q_a_layernorm, q_b_proj (V3) or q_proj, kv_a_proj_with_mqa (V2), then
// kv_a_layernorm, kv_b_proj, rotary_emb, attn, o_proj = 9 (V3) or 8 (V2);
// a dense mlp with gate_up_proj, act_fn, down_proj = 4; an MoE mlp with
// gate, experts, shared_experts and its 3 children = 7. V3: 4 layers, layer
// 0 dense; V2: 3 layers, layer 0 dense.
func TestDeepseekSitesInTreeOrder(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		sites     int
	}{{"v3", v3Config, 4 + 4*(3+9) + 4 + 3*7}, {"v2", v2Config, 4 + 3*(3+8) + 4 + 2*7}} {
		w := randWeights(parseCfg(t, c.cfg), 3, 0.05)
		e := load(t, c.cfg, &model.MapSource{Name: c.name, Tensors: w}, engine.Options{TP: 2, EP: true})
		rec := &enginetest.Recorder{Sites: func(*model.Site) bool { return true }, Names: []string{"-"}}
		if _, err := e.Prefill(prompts[:2], rec, false); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, s := range e.Tree.Sites {
			want = append(want, s.Path)
		}
		if strings.Join(rec.Visits, " ") != strings.Join(want, " ") {
			t.Fatalf("%s visited\n%v\nwant\n%v", c.name, rec.Visits, want)
		}
		if len(want) != c.sites {
			t.Errorf("%s: %d sites, want %d", c.name, len(want), c.sites)
		}
	}
}

// BenchmarkDeepseekPrefill runs the 22-token batch through the V3 test model
// (fixture sizes, 4 heads) on the CPU backend.
func BenchmarkDeepseekPrefill(b *testing.B) {
	w := randWeights(parseCfg(b, v3Config), 3, 0.05)
	for _, o := range []engine.Options{{TP: 1}, {TP: 2, EP: true}} {
		e := load(b, v3Config, &model.MapSource{Name: "v3", Tensors: w}, o)
		b.Run(fmt.Sprintf("tp%d_ep%v", o.TP, o.EP), func(b *testing.B) {
			for b.Loop() {
				if _, err := e.Prefill(prompts, nil, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDeepseekAttentionShapes: at layers.1.self_attn every rank shows the
// latent c_kv [tokens, kv_lora_rank] and k_pe [tokens, qk_rope_head_dim]
// replicated and equal, q and k sharded by heads, v [tokens,
// heads_r·v_head_dim].
func TestDeepseekAttentionShapes(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 5, 0.05)
	e := load(t, v3Config, &model.MapSource{Name: "v3", Tensors: w}, engine.Options{TP: 2})
	rec := &enginetest.Recorder{Sites: func(s *model.Site) bool { return s.Path == "model.layers.1.self_attn" }}
	if _, err := e.Prefill(prompts, rec, false); err != nil {
		t.Fatal(err)
	}
	T := 22
	for _, c := range []struct {
		name  string
		shape []int
		kind  model.ShardKind
	}{{"c_kv", []int{T, 40}, model.Replicated}, {"k_pe", []int{T, 8}, model.Replicated}, {"q", []int{T, 2 * 32}, model.Sharded},
		{"k", []int{T, 2 * 32}, model.Sharded}, {"v", []int{T, 2 * 20}, model.Sharded}, {"attn_out", []int{T, 2 * 20}, model.Sharded},
		{"output", []int{T, 96}, model.Replicated}} {
		k := "model.layers.1.self_attn/" + c.name
		got := rec.Got[k]
		if len(got) != 2 {
			t.Fatalf("%s on %d ranks", k, len(got))
		}
		for r, g := range got {
			if !slices.Equal(g.Shape, c.shape) || rec.Shards[k][r].Kind != c.kind {
				t.Errorf("rank %d %s: %v %v, want %v %v", r, c.name, g.Shape, rec.Shards[k][r], c.shape, c.kind)
			}
		}
		if c.kind == model.Replicated {
			if err := enginetest.CheckClose(got[1].F32(), got[0].F32(), 0); err != nil {
				t.Errorf("%s differs between ranks: %v", c.name, err)
			}
		}
		if c.kind == model.Sharded {
			if s := rec.Shards[k][1]; s.Start != s.End-s.Start || s.Full != 2*(s.End-s.Start) {
				t.Errorf("rank 1 %s shard %v", c.name, s)
			}
		}
	}
}

// TestDeepseekGateSite: the gate shows top-k ids and weights per token,
// tokens per expert summing to tokens·top_k, and under --ep each rank's load
// is the tokens per expert of its own block of experts.
func TestDeepseekGateSite(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 6, 0.05)
	e := load(t, v3Config, &model.MapSource{Name: "v3", Tensors: w}, engine.Options{TP: 4, EP: true})
	rec := &enginetest.Recorder{Sites: func(s *model.Site) bool { return s.Path == "model.layers.1.mlp.gate" }}
	if _, err := e.Prefill(prompts, rec, false); err != nil {
		t.Fatal(err)
	}
	k := "model.layers.1.mlp.gate/"
	ids, wts, load := rec.Got[k+"topk_ids"][0], rec.Got[k+"topk_weights"][0], rec.Got[k+"tokens_per_expert"][0]
	if !slices.Equal(ids.Shape, []int{22, 2}) || ids.DType != tensor.I64 || !slices.Equal(wts.Shape, []int{22, 2}) {
		t.Fatalf("topk_ids %v %s, topk_weights %v", ids.Shape, ids.DType, wts.Shape)
	}
	var total int64
	for i := range 8 {
		total += load.Int(i)
	}
	if total != 22*2 {
		t.Errorf("tokens per expert sum to %d, want 44", total)
	}
	// norm_topk_prob with routed_scaling_factor 2.5: each token's weights sum to 2.5.
	for tok := range 22 {
		if s := wts.F32()[2*tok] + wts.F32()[2*tok+1]; s < 2.5-1e-5 || s > 2.5+1e-5 {
			t.Fatalf("token %d weights sum to %v", tok, s)
		}
	}
	for r, l := range rec.Got[k+"local_load"] {
		sh := rec.Shards[k+"local_load"][r]
		if sh.Kind != model.Sharded || sh.Start != 2*r || sh.End != 2*r+2 || l.Int(0) != load.Int(2*r) || l.Int(1) != load.Int(2*r+1) {
			t.Errorf("rank %d local load %v (%v), experts %d-%d have %d, %d", r, l.ToF32(), sh, 2*r, 2*r+1, load.Int(2*r), load.Int(2*r+1))
		}
	}
}

// TestDeepseekDecodeMatchesPrefill: prefilling a prefix and decoding the rest
// token by token gives the logits of one prefill at every position (the MLA
// cache holds the right keys and values).
func TestDeepseekDecodeMatchesPrefill(t *testing.T) {
	for _, tc := range deepseekCases {
		w := randWeights(parseCfg(t, tc.cfg), tc.seed, 0.05)
		e := load(t, tc.cfg, &model.MapSource{Name: tc.name, Tensors: w}, engine.Options{TP: 2})
		full := prompts[2]
		ref, err := e.Prefill([][]int32{full}, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Prefill([][]int32{full[:4], prompts[1]}, nil, false); err != nil {
			t.Fatal(err)
		}
		for p := 4; p < len(full); p++ {
			l, err := e.Decode([]int32{full[p], 5}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := enginetest.CheckClose(l.Row(0), ref.Row(p), 1e-5); err != nil {
				t.Errorf("%s position %d: decode vs prefill rel diff %v", tc.name, p, err)
			}
		}
	}
}

// TestDeepseekSplitErrors: splits vLLM refuses are refused with the numbers.
func TestDeepseekSplitErrors(t *testing.T) {
	w := randWeights(parseCfg(t, v3Config), 1, 0.05)
	src := &model.MapSource{Name: "v3", Tensors: w}
	for _, c := range []struct {
		opts engine.Options
		want string
	}{
		{engine.Options{TP: 3}, "num_attention_heads 4 is not divisible by --tp 3"},
		{engine.Options{TP: 8}, "num_attention_heads 4 is not divisible by --tp 8"},
		{engine.Options{Layers: &model.LayerRange{First: 2, Last: 4}}, "--load-layers 2-4: the model has decoder layers 0-3"},
	} {
		_, err := engine.LoadSource("test", []byte(v3Config), src, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opts, err, c.want)
		}
	}
	dense := strings.Replace(v3Config, `"n_routed_experts":8`, `"n_routed_experts":null`, 1)
	_, err := engine.LoadSource("test", []byte(dense), src, engine.Options{TP: 2, EP: true})
	if err == nil || !strings.Contains(err.Error(), "--ep: DeepseekV3ForCausalLM has no routed experts") {
		t.Errorf("dense --ep: err = %v", err)
	}
	delete(w, "model.layers.2.mlp.experts.5.down_proj.weight")
	_, err = engine.LoadSource("test", []byte(v3Config), src, engine.Options{TP: 2, EP: true})
	if !errors.Is(err, model.ErrWeight) || !strings.Contains(err.Error(), "model.layers.2.mlp.experts.5.down_proj.weight is missing") || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("missing expert: err = %v", err)
	}
}
