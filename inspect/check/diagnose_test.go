package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// hfRef holds one fixture's HF values (testdata/hf/NAME/reference.safetensors):
// the per-layer outputs of three sequences of 7, 3 and 12 tokens, each run
// alone by HF transformers, rows concatenated. Faulty files below are cut
// from these values, so the reference stays HF's.
type hfRef struct {
	ids    []int64
	starts []int // 0, 7, 10
	lens   []int // 7, 3, 12
	t      map[string]*tensor.Tensor
}

func loadRef(t *testing.T, fixture string) *hfRef {
	t.Helper()
	f, err := safetensors.Open("../../testdata/hf/" + fixture + "/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &hfRef{t: map[string]*tensor.Tensor{}}
	for _, n := range f.Names() {
		x, err := f.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		c := tensor.New(x.DType, x.Shape...)
		copy(c.Data, x.Data)
		r.t[n] = c
	}
	ids := r.t["input_ids"]
	for i := range ids.Numel() {
		r.ids = append(r.ids, ids.Int(i))
	}
	sl := r.t["seq_lens"]
	off := 0
	for i := range sl.Numel() {
		r.starts = append(r.starts, off)
		r.lens = append(r.lens, int(sl.Int(i)))
		off += int(sl.Int(i))
	}
	return r
}

// rows returns rows [a, b) of HF tensor name as f32 [b-a, cols].
func (r *hfRef) rows(t *testing.T, name string, a, b int) []float32 {
	t.Helper()
	x, ok := r.t[name]
	if !ok {
		t.Fatalf("no %s in the reference", name)
	}
	c := x.Cols()
	return append([]float32(nil), x.F32()[a*c:b*c]...)
}

// seq returns sequence i's ids and rows [start, end) in the flat layout.
func (r *hfRef) seq(i int) (ids []int64, a, b int) {
	a, b = r.starts[i], r.starts[i]+r.lens[i]
	return r.ids[a:b], a, b
}

// dsEngine is the HF DeepSeek-V3 fixture.
func dsEngine(t *testing.T) *engine.Engine { return fixtureEngine(t, "deepseek_v3") }

// writeCapture writes an hsdb-dump-layout safetensors file: input_ids and
// hidden_states.{layer} [rows, w], plus extra tensors.
func writeCapture(t *testing.T, ids []int64, layers map[int][]float32, w int, extra ...safetensors.Named) string {
	t.Helper()
	named := []safetensors.Named{{Name: "input_ids", T: tensor.FromI64(ids, len(ids))}}
	for l := range 64 {
		if x, ok := layers[l]; ok {
			named = append(named, safetensors.Named{Name: fmt.Sprintf("hidden_states.%d", l), T: tensor.FromF32(x, len(x)/w, w)})
		}
	}
	named = append(named, extra...)
	p := filepath.Join(t.TempDir(), "c.safetensors")
	if err := safetensors.WriteFile(p, named, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// optsFor are check's options for a fixture, as cmd/hsdb builds them.
func optsFor(t *testing.T, fixture string, e *engine.Engine) CheckOptions {
	t.Helper()
	d, err := modelpath.ConfigDims("../../testdata/hf/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := modelpath.ConfigJSON("../../testdata/hf/" + fixture)
	if err != nil {
		t.Fatal(err)
	}
	o := CheckOptions{Dims: d}
	o.BOS, o.HasBOS, o.Constants, err = ConfigFacts(data)
	if err != nil {
		t.Fatal(err)
	}
	if e != nil {
		o.Model = targetOf(e)
	}
	return o
}

// verdictOf checks one file and asserts that check and diff agree: diff
// departs exactly when check's verdict is not valid.
func verdictOf(t *testing.T, p string, o CheckOptions) (*Report, string) {
	t.Helper()
	r := CheckFile(p, o)
	lines, departs := r.DiffLines()
	if departs != (r.Verdict() != VerdictValid) {
		t.Errorf("check says %s, diff departs=%v\n%s\n%s", r.Verdict(), departs, strings.Join(r.Lines(), "\n"), strings.Join(lines, "\n"))
	}
	return r, strings.Join(r.Lines(), "\n")
}

func scaled(x []float32, f float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v * f
	}
	return out
}

// TestDiagnoseFaultKinds: each fault kind, written from HF's values, is
// named in one line of the report (the factor and its constant, the
// shift, the order, the BOS realignment, the chunk boundary, the
// condition), with the verdict check and diff share.
func TestDiagnoseFaultKinds(t *testing.T) {
	ll := loadRef(t, "llama")
	ids2, a2, b2 := ll.seq(2) // 12 tokens
	ids0, a0, b0 := ll.seq(0) // 7 tokens, starts with token 20
	_, a1, b1 := ll.seq(1)    // 3 tokens
	const H = 96
	lo := func() CheckOptions { return optsFor(t, "llama", llamaEngine(t)) }
	type tc struct {
		name string
		path func() string
		opts func() CheckOptions
		want []string
		v    Verdict
	}
	cases := []tc{
		{name: "good", v: VerdictValid, opts: lo,
			path: func() string {
				return writeCapture(t, ids2, map[int][]float32{0: ll.rows(t, "layer.0", a2, b2), 2: ll.rows(t, "layer.2", a2, b2)}, H)
			}},
		{name: "scale by an unnamed factor", v: VerdictProblems, opts: lo,
			want: []string{"hidden_states.1: labelled layer 1, matches stream of layer 1 scaled by 3.7 (cos 1.000000", "the values are scaled by 3.7"},
			path: func() string {
				return writeCapture(t, ids2, map[int][]float32{1: scaled(ll.rows(t, "layer.1", a2, b2), 3.7)}, H)
			}},
		{name: "scale by 1/sqrt(hidden_size)", v: VerdictProblems, opts: lo,
			want: []string{"stream of layer 0 scaled by 0.1021 (= 1/sqrt(hidden_size))"},
			path: func() string {
				return writeCapture(t, ids2, map[int][]float32{0: scaled(ll.rows(t, "layer.0", a2, b2), float32(1/9.797958971132712))}, H)
			}},
		{name: "rows shifted by one", v: VerdictProblems, opts: lo,
			want: []string{"labelled layer 1, matches stream of layer 1 with rows shifted by +1 (row i holds token i+1) (cos 1.000000", "misaligned with input_ids by +1"},
			path: func() string {
				x := ll.rows(t, "layer.1", a2, b2)
				sh := append(append([]float32(nil), x[H:]...), x[len(x)-H:]...) // row r = token r+1, last row repeated
				return writeCapture(t, ids2, map[int][]float32{1: sh}, H)
			}},
		{name: "sequences in another order", v: VerdictProblems, opts: lo,
			want: []string{"with the sequences in order 2,0,1 (input_ids in order 0,1,2) (cos 1.000000", "string-sorted request ids"},
			path: func() string {
				x := ll.rows(t, "layer.2", 0, 22)
				perm := append(append(append([]float32(nil), x[a2*H:b2*H]...), x[a0*H:b0*H]...), x[a1*H:b1*H]...)
				return writeCapture(t, ll.ids, map[int][]float32{2: perm}, H,
					safetensors.Named{Name: "seq_lens", T: tensor.FromI64([]int64{7, 3, 12}, 3)})
			}},
		{name: "flattened with its own seq_lens", v: VerdictValid, opts: lo,
			want: []string{"3 sequences flattened, split by the file's own seq_lens tensor: 7 + 3 + 12 tokens"},
			path: func() string {
				return writeCapture(t, ll.ids, map[int][]float32{0: ll.rows(t, "layer.0", 0, 22), 1: ll.rows(t, "layer.1", 0, 22)}, H,
					safetensors.Named{Name: "seq_lens", T: tensor.FromI64([]int64{7, 3, 12}, 3)})
			}},
		{name: "flattened without seq_lens", v: VerdictProblems, opts: lo,
			want: []string{"22 = 7 + 3 + 12 (tokens of sequences 0..2, flattened)"},
			path: func() string {
				return writeCapture(t, ll.ids, map[int][]float32{1: ll.rows(t, "layer.1", 0, 22)}, H)
			}},
		{name: "labels saved as input_ids", v: VerdictProblems,
			opts: func() CheckOptions { o := lo(); o.BOS, o.HasBOS = int32(ids0[0]), true; return o },
			want: []string{"stream of layer 1 of [BOS] + input_ids[:-1] (input_ids hold the labels, shifted left by one) (cos 1.000000", "EAGLE #317"},
			path: func() string {
				labels := append(append([]int64(nil), ids0[1:]...), 42)
				return writeCapture(t, labels, map[int][]float32{1: ll.rows(t, "layer.1", a0, b0)}, H)
			}},
		{name: "BOS dropped", v: VerdictProblems,
			opts: func() CheckOptions { o := lo(); o.BOS, o.HasBOS = int32(ids0[0]), true; return o },
			want: []string{"stream of layer 2 of [BOS] + input_ids with the BOS row dropped"},
			path: func() string {
				return writeCapture(t, ids0[1:], map[int][]float32{2: ll.rows(t, "layer.2", a0+1, b0)}, H)
			}},
		{name: "BOS added", v: VerdictProblems,
			opts: func() CheckOptions { o := lo(); o.BOS, o.HasBOS = 77, true; return o },
			want: []string{"stream of layer 0 of input_ids[1:] (the file's leading BOS was not in the forward pass)"},
			path: func() string {
				x := ll.rows(t, "layer.0", a2, b2)
				return writeCapture(t, append([]int64{77}, ids2...), map[int][]float32{0: append(append([]float32(nil), x[:H]...), x...)}, H)
			}},
		{name: "chunk without context (BOS)", v: VerdictProblems,
			opts: func() CheckOptions { o := lo(); o.BOS, o.HasBOS = int32(ids0[0]), true; return o },
			want: []string{"chunk boundary without context at token 7: from token 7 the captured rows match hsdb's forward pass restarted at token 7", "vLLM #52909"},
			path: func() string {
				return writeCapture(t, ll.ids[:10], map[int][]float32{1: ll.rows(t, "layer.1", 0, 10)}, H)
			}},
		{name: "chunk without context (seq_lens says one sequence)", v: VerdictProblems, opts: lo,
			want: []string{"FAIL  one sequence      chunk boundary without context at token 7"},
			path: func() string {
				return writeCapture(t, ll.ids[:10], map[int][]float32{1: ll.rows(t, "layer.1", 0, 10)}, H,
					safetensors.Named{Name: "seq_lens", T: tensor.FromI64([]int64{10}, 1)})
			}},
		{name: "two sequences, each with BOS", v: VerdictProblems,
			opts: func() CheckOptions { o := lo(); o.BOS, o.HasBOS = int32(ids0[0]), true; return o },
			want: []string{"14 = 7 + 7 (tokens of sequences 0 and 1, flattened)"},
			path: func() string {
				x := ll.rows(t, "layer.1", a0, b0)
				return writeCapture(t, append(append([]int64(nil), ids0...), ids0...), map[int][]float32{1: append(append([]float32(nil), x...), x...)}, H)
			}},
		{name: "all zeros", v: VerdictProblems, opts: lo,
			want: []string{"hidden_states.1 holds all zeros", "the hook never fired"},
			path: func() string {
				return writeCapture(t, ids2, map[int][]float32{0: ll.rows(t, "layer.0", a2, b2), 1: make([]float32, 12*H)}, H)
			}},
		{name: "saturated at bf16 max", v: VerdictProblems, opts: lo,
			want: []string{"FAIL  values", "2 values saturated at bf16's max ±3.3895e+38 (first at token 3, channel 5)"},
			path: func() string {
				x := ll.rows(t, "layer.2", a2, b2)
				x[3*H+5], x[7*H+1] = 3.3895313892515355e38, -3.3895313892515355e38
				return writeCapture(t, ids2, map[int][]float32{2: x}, H)
			}},
		{name: "constant rows", v: VerdictProblems, opts: lo,
			want: []string{"every row constant across its channels"},
			path: func() string {
				x := make([]float32, 12*H)
				for i := range x {
					x[i] = float32(i / H)
				}
				return writeCapture(t, ids2, map[int][]float32{1: x}, H)
			}},
		{name: "all-gather along rows at tp 2", v: VerdictProblems, opts: lo,
			want: []string{"24 rows = 2 × len(input_ids) 12 and 48 = hidden_size / 2: the column shards of 2 ranks stacked along rows",
				"its 2 row blocks put side by side match stream of layer 1 (cos 1.000000"},
			path: func() string {
				x := ll.rows(t, "layer.1", a2, b2)
				var s []float32
				for r := range 2 {
					for i := range 12 {
						s = append(s, x[i*H+r*48:i*H+(r+1)*48]...)
					}
				}
				return writeCapture(t, ids2, map[int][]float32{1: s}, 48)
			}},
		{name: "shard of tp 4", v: VerdictProblems, opts: lo,
			want: []string{"matches stream of layer 1, columns 24:48 (rank 1 of tp 4) (cos 1.000000", "rank 1 of 4"},
			path: func() string {
				x := ll.rows(t, "layer.1", a2, b2)
				var s []float32
				for r := range 12 {
					s = append(s, x[r*H+24:r*H+48]...)
				}
				return writeCapture(t, ids2, map[int][]float32{1: s}, 24)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, text := verdictOf(t, c.path(), c.opts())
			if r.Verdict() != c.v {
				t.Errorf("verdict %s, want %s\n%s", r.Verdict(), c.v, text)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "FAIL") != (c.v != VerdictValid) {
				t.Errorf("FAIL in the text does not agree with the verdict %s:\n%s", r.Verdict(), text)
			}
		})
	}
}

// TestDiagnoseDeepSeek: on the DeepSeek fixture, a stream divided by
// routed_scaling_factor (2.5 in its config.json) names the constant, and
// a departure at layer 1 (the first MoE layer: first_k_dense_replace 1)
// with dense layer 0 matching is attributed to routing or the experts.
func TestDiagnoseDeepSeek(t *testing.T) {
	ds := loadRef(t, "deepseek_v3")
	ids2, a2, b2 := ds.seq(2)
	o := optsFor(t, "deepseek_v3", dsEngine(t))
	p := writeCapture(t, ids2, map[int][]float32{2: scaled(ds.rows(t, "layer.2", a2, b2), 1/2.5)}, 96)
	_, text := verdictOf(t, p, o)
	for _, w := range []string{"matches stream of layer 2 scaled by 0.4 (= 1/routed_scaling_factor) (cos 1.000000", "vLLM #13232"} {
		if !strings.Contains(text, w) {
			t.Errorf("scaled: lacks %q\n%s", w, text)
		}
	}
	// layer 1's MLP output (the routed experts' sum) weighted 0.7: what a
	// change in the routing weights does to the layer's stream.
	l1, m1 := ds.rows(t, "layer.1", a2, b2), ds.rows(t, "mlp.1.out", a2, b2)
	for i := range l1 {
		l1[i] -= 0.3 * m1[i]
	}
	p = writeCapture(t, ids2, map[int][]float32{0: ds.rows(t, "layer.0", a2, b2), 1: l1}, 96)
	r, text := verdictOf(t, p, o)
	if r.Verdict() != VerdictProblems || !strings.Contains(text, "the first departure is at layer 1, the first MoE layer captured (first_k_dense_replace = 1), while the dense layers before it match") ||
		!strings.Contains(text, "TRT-Model-Connect #662") {
		t.Errorf("MoE: %s\n%s", r.Verdict(), text)
	}
	// HF's router choices (router.1.topk_ids) beside HF's layer 1 pass the
	// router rule; with token 4's two experts replaced by two others the
	// layer and token are named.
	topk := ds.t["router.1.topk_ids"]
	k := topk.Cols()
	hfIDs := make([]int64, 0, 12*k)
	for i := a2 * k; i < b2*k; i++ {
		hfIDs = append(hfIDs, topk.Int(i))
	}
	mk := func(ids []int64) string {
		return writeCapture(t, ids2, map[int][]float32{1: ds.rows(t, "layer.1", a2, b2)}, 96,
			safetensors.Named{Name: "router.1.topk_ids", T: tensor.FromI64(ids, 12, k)})
	}
	r, text = verdictOf(t, mk(hfIDs), o)
	if x, _ := r.Rule(capture.RuleRouter); r.Verdict() != VerdictValid || x.Status != capture.Pass {
		t.Errorf("HF's routing: %s\n%s", r.Verdict(), text)
	}
	bad := append([]int64(nil), hfIDs...)
	used := map[int64]bool{bad[4*k]: true, bad[4*k+1]: true}
	j := 0
	for e := int64(0); e < 8 && j < k; e++ {
		if !used[e] {
			bad[4*k+j] = e
			j++
		}
	}
	r, text = verdictOf(t, mk(bad), o)
	pair := sortedPair(bad[4*k : 5*k]) // k = 2 experts per token, written as Python prints a list
	want := fmt.Sprintf("the router at layer 1 chose other experts than the model's for 1 of 12 tokens (first token 4: [%d, %d], the model [", pair[0], pair[1])
	if r.Verdict() != VerdictProblems || !strings.Contains(text, want) {
		t.Errorf("other experts: lacks %q\n%s", want, text)
	}
}

func sortedPair(x []int64) []int64 {
	y := append([]int64(nil), x...)
	for i := range y {
		for j := i + 1; j < len(y); j++ {
			if y[j] < y[i] {
				y[i], y[j] = y[j], y[i]
			}
		}
	}
	return y
}

// TestSeedCaseTinyAndReal: the seed's fault — each token's c_kv written as
// its own tensor for two flattened sequences — says kv_lora_rank and the
// flattening both at the DeepSeek fixture's sizes with its model (where
// kv_lora_rank 40 = intermediate_size 160 / 4 at --tp 4: the values, not
// the arithmetic, decide) and, from config.json alone, in a config where
// kv_lora_rank equals hidden_size / 4 (both readings listed, marked as
// shape-only).
func TestSeedCaseTinyAndReal(t *testing.T) {
	o := optsFor(t, "deepseek_v3", dsEngine(t))
	o.TP, o.Layers = 4, []int{3}
	r, text := verdictOf(t, filepath.Join(capturesDir, "ds_latent_flattened.pt"), o)
	for _, w := range []string{"19 tensors of [40]: 19 = 12 + 7 (tokens of sequences 0 and 1, flattened); 40 = kv_lora_rank, not hidden_size 96 (measured: the values are model.layers.3.self_attn.kv_a_layernorm",
		"MLA's compressed KV c_kv"} {
		if !strings.Contains(text, w) {
			t.Errorf("fixture: lacks %q\n%s", w, text)
		}
	}
	if strings.Contains(text, "column shard") || r.Verdict() != VerdictProblems {
		t.Errorf("fixture: a shard reading, or verdict %s\n%s", r.Verdict(), text)
	}
	// hidden_size 160, kv_lora_rank 40 = 160 / 4: without a model both
	// readings are listed and the sentence says it rests on shapes.
	cfg := `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","hidden_size":160,"intermediate_size":320,
	"moe_intermediate_size":36,"kv_lora_rank":40,"q_lora_rank":56,"qk_nope_head_dim":24,"qk_rope_head_dim":8,"v_head_dim":20,
	"num_attention_heads":4,"num_key_value_heads":4,"num_hidden_layers":4,"vocab_size":101}`
	d, err := modelpath.DimsFromConfigJSON([]byte(cfg), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]Entry, 19)
	for i := range entries {
		entries[i] = Entry{Key: "hidden_states", Layer: -1, T: tensor.New(tensor.F32, 40)}
	}
	f := &shapeFacts{entries: entries, idsLen: 19, seqLens: []int{12, 7}, hidden: d.Hidden, layers: 1, named: d.Named}
	dg := diagnoseShapes(f)
	want := "19 tensors of [40]: 19 = 12 + 7 (tokens of sequences 0 and 1, flattened); 40 = kv_lora_rank = hidden_size / 4 (one rank's column shard at tp 4), not hidden_size 160"
	if dg == nil || !strings.HasPrefix(dg.Sentence, want) || !strings.Contains(dg.Sentence, "a reading from shapes alone (no model ran)") ||
		!strings.Contains(dg.Cause, "either") {
		t.Errorf("config only: %+v\nwant prefix %q", dg, want)
	}
}

// TestLossMaskShift: a two-turn conversation (template token 7 before each
// answer, end-of-turn token 2 closing it); the mask over the answers
// passes, the same mask moved one token left (computed on the labels)
// fails naming the shift that aligns it. No model is needed: the ids
// alone decide.
func TestLossMaskShift(t *testing.T) {
	ids := []int64{5, 11, 12, 7, 30, 31, 2, 13, 7, 40, 41, 42, 2}
	good := []int64{0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1}
	bad := []int64{0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0}
	x := make([]float32, len(ids)*4)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for _, c := range []struct {
		mask []int64
		want string
		v    Verdict
	}{{good, "pass  loss_mask         2 spans of loss_mask 1, each after token 7 and ending at token 2", VerdictValid},
		{bad, "loss_mask is shifted by -1 relative to input_ids (moving it by +1 aligns all 2 spans: after token 7, ending at token 2)", VerdictProblems}} {
		p := writeCapture(t, ids, map[int][]float32{0: x}, 4, safetensors.Named{Name: "loss_mask", T: tensor.FromI64(c.mask, len(c.mask))})
		r := CheckFile(p, CheckOptions{})
		text := strings.Join(r.Lines(), "\n")
		if r.Verdict() != c.v || !strings.Contains(text, c.want) {
			t.Errorf("verdict %s, want %s; lacks %q?\n%s", r.Verdict(), c.v, c.want, text)
		}
	}
}

// TestCorrectLayoutsPass: HF's values in the safetensors layouts check
// reads — hsdb's dump keys, layers keyed "layers.N", a flattened batch with
// its seq_lens, the speculators list (testdata/captures' good files in
// TestCheckFixtures) — pass check and diff with the model, in f32 and
// rounded to bf16.
func TestCorrectLayoutsPass(t *testing.T) {
	ll := loadRef(t, "llama")
	ids2, a2, b2 := ll.seq(2)
	o := optsFor(t, "llama", llamaEngine(t))
	idsT := tensor.FromI64(ids2, len(ids2))
	for _, dt := range []tensor.DType{tensor.F32, tensor.BF16} {
		conv := func(x []float32, shape ...int) *tensor.Tensor {
			tt := tensor.FromF32(x, shape...)
			if dt == tensor.BF16 {
				return tt.Convert(tensor.BF16)
			}
			return tt
		}
		layouts := map[string][]safetensors.Named{
			"keyed layers.N": {{Name: "input_ids", T: idsT}, {Name: "layers.0", T: conv(ll.rows(t, "layer.0", a2, b2), 12, 96)},
				{Name: "layers.2", T: conv(ll.rows(t, "layer.2", a2, b2), 12, 96)}},
			"flattened with seq_lens": {{Name: "input_ids", T: tensor.FromI64(ll.ids, 22)}, {Name: "seq_lens", T: tensor.FromI64([]int64{7, 3, 12}, 3)},
				{Name: "hidden_states.1", T: conv(ll.rows(t, "layer.1", 0, 22), 22, 96)}},
		}
		for name, named := range layouts {
			p := filepath.Join(t.TempDir(), "c.safetensors")
			if err := safetensors.WriteFile(p, named, nil); err != nil {
				t.Fatal(err)
			}
			r, text := verdictOf(t, p, o)
			if r.Verdict() != VerdictValid {
				t.Errorf("%s %s: %s\n%s", dt, name, r.Verdict(), text)
			}
			if m, _ := r.Rule(capture.RuleMatch); m.Status != capture.Pass {
				t.Errorf("%s %s: matches model %s", dt, name, m.Status)
			}
		}
	}
}

// TestLossMaskShiftOverDirectory: single-turn files (one masked answer
// each, after template token 7 and ending at end-of-turn token 2) cannot
// be judged alone; a directory of them is judged together: aligned masks
// pass, the same masks moved one token left fail naming the shift.
func TestLossMaskShiftOverDirectory(t *testing.T) {
	files := [][]int64{{5, 11, 7, 30, 31, 2}, {5, 12, 13, 7, 40, 2}, {5, 7, 50, 51, 52, 2}}
	for _, c := range []struct {
		shift int
		want  string
		v     Verdict
	}{{0, "pass  loss_mask         3 spans of loss_mask 1 over 3 files, each after token 7 and ending at token 2", VerdictValid},
		{1, "FAIL  loss_mask         loss_mask is misaligned with input_ids by -1: moved by +1 token, its 3 spans over 3 files each start after token 7 and end at token 2", VerdictProblems}} {
		dir := t.TempDir()
		for i, ids := range files {
			mask := make([]int64, len(ids))
			for j := range ids {
				if j > 0 && slicesIndex(ids, 7) < j+c.shift && j+c.shift < len(ids) {
					mask[j] = 1
				}
			}
			x := make([]float32, len(ids)*4)
			for k := range x {
				x[k] = float32((k+i)%5) - 2
			}
			named := []safetensors.Named{{Name: "input_ids", T: tensor.FromI64(ids, len(ids))}, {Name: "hidden_states.0", T: tensor.FromF32(x, len(ids), 4)},
				{Name: "loss_mask", T: tensor.FromI64(mask, len(mask))}}
			if err := safetensors.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.safetensors", i)), named, nil); err != nil {
				t.Fatal(err)
			}
		}
		p := CheckPath(dir, CheckOptions{})
		text := strings.Join(p.Lines(), "\n")
		if p.Verdict() != c.v || !strings.Contains(text, c.want) {
			t.Errorf("shift %d: verdict %s, want %s; lacks %q?\n%s", c.shift, p.Verdict(), c.v, c.want, text)
		}
	}
}

func slicesIndex(xs []int64, v int64) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

// TestPrefillsPerFile: a good file costs one forward pass; a file whose
// entry is not what it claims adds the pass with every site tensor of a
// fitting width, and one that no reading explains adds the realignment
// pass (no BOS known: no BOS passes).
func TestPrefillsPerFile(t *testing.T) {
	e := llamaEngine(t)
	n := 0
	tg := targetOf(e)
	inner := tg.Prefill
	tg.Prefill = func(s [][]int32, h model.Hook) error { n++; return inner(s, h) }
	for _, c := range []struct {
		file string
		want int
	}{{"good_speculators.pt", 1}, {"no_residual.pt", 2}, {"shifted_by_one.pt", 2}} {
		n = 0
		CheckFile(filepath.Join(capturesDir, c.file), CheckOptions{Model: tg, Layers: []int{0, 1, 2}})
		if n != c.want {
			t.Errorf("%s: %d forward passes, want %d", c.file, n, c.want)
		}
	}
	ll := loadRef(t, "llama")
	ids2, a2, b2 := ll.seq(2)
	x := ll.rows(t, "layer.1", a2, b2)
	p := writeCapture(t, ids2, map[int][]float32{1: append(append([]float32(nil), x[96:]...), x[len(x)-96:]...)}, 96)
	n = 0
	CheckFile(p, CheckOptions{Model: tg})
	if n != 3 {
		t.Errorf("rows shifted: %d forward passes, want 3 (match, sites, realign)", n)
	}
}
