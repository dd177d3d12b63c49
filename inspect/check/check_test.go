package check

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

var (
	fixtureMu   sync.Mutex
	fixtureEngs = map[string]*engine.Engine{}
)

// fixtureEngine opens testdata/hf/NAME at --tp 1 once for the tests of
// this package.
func fixtureEngine(t *testing.T, name string) *engine.Engine {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if e := fixtureEngs[name]; e != nil {
		return e
	}
	e, err := engine.Open("../../testdata/hf/"+name, engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	fixtureEngs[name] = e
	return e
}

// llamaEngine is the HF llama fixture the capture fixtures were cut from
// (testdata/README.md, part B).
func llamaEngine(t *testing.T) *engine.Engine { return fixtureEngine(t, "llama") }

func llamaCheck(t *testing.T, name string) *Report {
	t.Helper()
	return CheckFile(filepath.Join(capturesDir, name), CheckOptions{Dims: llamaDims(t), Model: targetOf(llamaEngine(t)), Layers: []int{0, 1, 2}})
}

func diagText(r *Report) string {
	var s []string
	for _, d := range r.Diagnoses {
		s = append(s, d.Sentence+" || "+d.Cause)
	}
	return strings.Join(s, "\n")
}

// TestCheckFixtures: check with --model testdata/hf/llama --layers 0,1,2
// passes the good fixtures and rejects each broken one by the rule and the
// diagnosis EXPECTED.json's what_is_wrong describes. The facts asserted
// (which rule fails, what each entry matches, the numbers) are those of
// testdata/captures/EXPECTED.json, which the generator wrote from what HF
// computed.
func TestCheckFixtures(t *testing.T) {
	cases := []struct {
		file  string
		fail  []string // rules that must fail; none means the file passes
		facts []string // substrings of the diagnoses
	}{
		{file: "good_speculators.pt"},
		{file: "good_speculators_bf16.pt"},
		{file: "good.safetensors"},
		{file: "flattened_batch.pt", fail: []string{capture.RuleOneSeq},
			facts: []string{"3 tensors of [19, 96]: 19 = 12 + 7 (tokens of sequences 0 and 1, flattened)", "split it by seq_lens [12, 7]"}},
		{file: "per_token_rows.pt", fail: []string{capture.RuleShape, capture.RuleLayerCount},
			facts: []string{"12 tensors of [96]: 12 = len(input_ids) (one tensor per token); 96 = hidden_size", "stacked) (unlabelled) matches stream of layer 1"}},
		{file: "rank_shard.pt", fail: []string{capture.RuleShape, capture.RuleMatch},
			facts: []string{"3 tensors of [12, 48]: 48 = hidden_size / 2 (one rank's column shard at tp 2, measured: cos 1.000000), not hidden_size 96", "ratio 0.5",
				"labelled layer 1, matches stream of layer 1, columns 0:48 (rank 0 of tp 2) (cos 1.000000", "never all-gathered"}},
		{file: "no_residual.pt", fail: []string{capture.RuleMatch},
			facts: []string{"labelled layer 0, matches hidden_states of layer 0", "labelled layer 2, matches hidden_states of layer 2", "residual never added"}},
		{file: "shifted_by_one.pt", fail: []string{capture.RuleMatch},
			facts: []string{"labelled layer 0, matches embeddings", "labelled layer 1, matches stream of layer 0 (cos 1.000000", "labelled layer 2, matches stream of layer 1 (cos 1.000000",
				"output_hidden_states[i] was used for layer i"}},
		{file: "final_norm.pt", fail: []string{capture.RuleMatch},
			facts: []string{"labelled layer 2, matches normed stream of layer 2 (model.norm output = HF's last output_hidden_states entry) (cos 1.000000", "final norm applied"}},
		{file: "nan.pt", fail: []string{capture.RuleFinite},
			facts: []string{"3 NaN and 0 Inf in hidden_states[1] (layer 1) at (token 0, channel 5), (token 3, channel 17), (token 11, channel 95)"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			r := llamaCheck(t, c.file)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			var failed []string
			for _, x := range r.Rules {
				if x.Status == capture.Fail {
					failed = append(failed, x.Rule)
				}
			}
			for _, want := range c.fail {
				if !contains(failed, want) {
					t.Errorf("rule %q did not fail; failed: %v\n%s", want, failed, strings.Join(r.Lines(), "\n"))
				}
			}
			if len(c.fail) == 0 && r.Failed() {
				t.Errorf("good file rejected:\n%s", strings.Join(r.Lines(), "\n"))
			}
			if len(c.fail) == 0 {
				if m, _ := r.Rule(capture.RuleMatch); m.Status != capture.Pass {
					t.Errorf("good file: %s %s", m.Status, m.Detail)
				}
			}
			text := diagText(r)
			for _, f := range c.facts {
				if !strings.Contains(text, f) {
					t.Errorf("diagnoses lack %q:\n%s", f, text)
				}
			}
		})
	}
}

// TestCheckEvilGlobal: the forbidden-global fixture is unreadable (check
// exits 2), with the global named.
func TestCheckEvilGlobal(t *testing.T) {
	r := CheckFile(filepath.Join(capturesDir, "evil_global.pt"), CheckOptions{})
	if !errors.Is(r.Err, ErrForbiddenGlobal) || !strings.Contains(r.Err.Error(), "posix.system") || !r.Failed() {
		t.Fatalf("%v", r.Err)
	}
}

// TestCheckDSLatent: ds_latent_flattened.pt holds 19 tensors of [40], each
// token's compressed KV (kv_lora_rank 40 in hf/deepseek_v3/config.json) for
// two flattened sequences of 12 and 7 tokens (EXPECTED.json). The forensics
// need only config.json: with --seq-lens 12,7 the sentence reads like the
// seed's 771 = 512 + 259; without it the count is read as one tensor per
// token. With the DeepSeek model loaded, the forward pass finds the 12 + 7
// split and names layer 3's latent itself.
func TestCheckDSLatent(t *testing.T) {
	d, err := modelpath.ConfigDims("../../testdata/hf/deepseek_v3")
	if err != nil {
		t.Fatal(err)
	}
	if d.Hidden != 96 || d.Named["kv_lora_rank"] != 40 {
		t.Fatalf("config dims: hidden %d kv_lora_rank %d", d.Hidden, d.Named["kv_lora_rank"])
	}
	p := filepath.Join(capturesDir, "ds_latent_flattened.pt")
	r := CheckFile(p, CheckOptions{Dims: d, Layers: []int{3}, SeqLens: []int{12, 7}})
	text := diagText(r)
	for _, f := range []string{"19 tensors of [40]: 19 = 12 + 7 (tokens of sequences 0 and 1, flattened); 40 = kv_lora_rank, not hidden_size 96; expected 1 tensor of [seq_len, 96]",
		"compressed KV", "flattened batch (split it per sequence by seq_lens [12, 7])"} {
		if !strings.Contains(text, f) {
			t.Errorf("with --seq-lens: diagnoses lack %q:\n%s", f, text)
		}
	}
	if x, _ := r.Rule(capture.RuleShape); x.Status != capture.Fail {
		t.Errorf("shape rule %s", x.Status)
	}
	r = CheckFile(p, CheckOptions{Dims: d})
	if text := diagText(r); !strings.Contains(text, "19 tensors of [40]: 19 = len(input_ids) (one tensor per token); 40 = kv_lora_rank, not hidden_size 96") {
		t.Errorf("config only: %s", text)
	}
	e, err := engine.Open("../../testdata/hf/deepseek_v3", engine.Options{TP: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r = CheckFile(p, CheckOptions{Dims: d, Model: targetOf(e), Layers: []int{3}})
	text = diagText(r)
	if !strings.Contains(text, "19 = 12 + 7 (tokens of sequences 0 and 1, flattened)") || len(r.Matches) != 1 || r.Matches[0].Best.Layer != 3 ||
		r.Matches[0].Best.Site != "model.layers.3.self_attn.kv_a_layernorm" || !(r.Matches[0].BestScore.Cos >= 0.9999) {
		t.Errorf("with the model: seq_lens %v, matches %v\n%s", r.SeqLens, r.Matches, text)
	}
	t.Logf("the latent matches %s", r.Matches[0].Best)
}

// TestForensicsSeedCase reproduces the motivating failure in DeepSeek-V3's
// sizes (its published config.json: hidden_size 7168, kv_lora_rank 512,
// q_lora_rank 1536, moe_intermediate_size 2048, ...): 771 tensors of [512]
// written for a two-sequence batch of 512 + 259 tokens, with 4 layers
// requested.
func TestForensicsSeedCase(t *testing.T) {
	cfg := `{"architectures":["DeepseekV3ForCausalLM"],"model_type":"deepseek_v3","hidden_size":7168,"intermediate_size":18432,
	"moe_intermediate_size":2048,"kv_lora_rank":512,"q_lora_rank":1536,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
	"num_attention_heads":128,"num_key_value_heads":128,"num_hidden_layers":61,"vocab_size":129280,"bos_token_id":0}`
	d, err := modelpath.DimsFromConfigJSON([]byte(cfg), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]Entry, 771)
	for i := range entries {
		entries[i] = Entry{Key: "hidden_states", Layer: -1, T: tensor.New(tensor.BF16, 512)}
	}
	f := &shapeFacts{entries: entries, idsLen: 771, seqLens: []int{512, 259}, hidden: d.Hidden, layers: 4, tp: 8, named: d.Named}
	dg := diagnoseShapes(f)
	want := "771 tensors of [512]: 771 = 512 + 259 (tokens of sequences 0 and 1, flattened); 512 = kv_lora_rank, not hidden_size 7168; expected 4 tensors of [seq_len, 7168] per sequence"
	if dg == nil || !strings.HasPrefix(dg.Sentence, want) {
		t.Fatalf("got %+v\nwant %q", dg, want)
	}
	// 4 layers × 771 tokens × 7168 expected, 771 × 512 found: ratio 1/56.
	if !strings.Contains(dg.Sentence, "ratio 0.0179") || !strings.Contains(dg.Cause, "kv_lora_rank: MLA's compressed KV") {
		t.Fatalf("%+v", dg)
	}
}

// TestExplainWidth: hand-checked readings of widths in DeepSeek-V3 and
// Llama sizes.
func TestExplainWidth(t *testing.T) {
	named := map[string]int{"hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512, "q_lora_rank": 1536,
		"qk_rope_head_dim": 64, "kv_lora_rank+qk_rope_head_dim": 576, "moe_intermediate_size": 2048}
	cases := []struct {
		w, tp int
		want  string
	}{
		{512, 0, "kv_lora_rank"},           // exact: shard readings (2048/4) suppressed
		{896, 0, "hidden_size / 8"},        // 7168 / 8
		{2304, 8, "intermediate_size / 8"}, // 18432 / 8
		{576, 0, "kv_lora_rank+qk_rope_head_dim"},
		{1000, 0, ""},
	}
	for _, c := range cases {
		got := strings.Join(ExplainWidth(c.w, named, c.tp), ", ")
		if got != c.want {
			t.Errorf("ExplainWidth(%d, tp %d) = %q, want %q", c.w, c.tp, got, c.want)
		}
	}
}

// TestMatchFindsThreeSequences: HF's layer outputs for the llama fixture's
// three sequences (7, 3 and 12 tokens, each run alone by HF, rows
// concatenated: testdata/hf/llama/reference.safetensors) written as one
// flattened "sequence" of 22 tokens: the forward pass splits it back into
// 7 + 3 + 12.
func TestMatchFindsThreeSequences(t *testing.T) {
	ref, err := safetensors.Open("../../testdata/hf/llama/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ids, _ := ref.Tensor("input_ids")
	var named []safetensors.Named
	named = append(named, safetensors.Named{Name: "input_ids", T: ids})
	for _, l := range []int{0, 1} {
		x, _ := ref.Tensor(fmt.Sprintf("layer.%d", l))
		named = append(named, safetensors.Named{Name: fmt.Sprintf("hidden_states.%d", l), T: x})
	}
	p := filepath.Join(t.TempDir(), "flat.safetensors")
	if err := safetensors.WriteFile(p, named, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := modelpath.ConfigDims("../../testdata/hf/llama")
	r := CheckFile(p, CheckOptions{Dims: d, Model: targetOf(llamaEngine(t))})
	if fmt.Sprint(r.SeqLens) != "[7 3 12]" {
		t.Fatalf("found %v\n%s", r.SeqLens, strings.Join(r.Lines(), "\n"))
	}
	if !strings.Contains(diagText(r), "22 = 7 + 3 + 12 (tokens of sequences 0..2, flattened)") {
		t.Fatalf("%s", diagText(r))
	}
}

// TestDiffFirstDeparture: a capture of layers 0, 1, 2 whose layer 1 is
// perturbed from token 4 on (by 1% of the layer's largest value, a bf16
// rounding step — well beyond f32 tolerance) departs first at layer 1, token 4.
func TestDiffFirstDeparture(t *testing.T) {
	e := llamaEngine(t)
	c := capture.NewCapturer(e.Tree, e.Dims.Layers)
	c.AddLayers([]int{0, 1, 2}, capture.WhatStream)
	seq := []int32{5, 17, 3, 99, 42, 8, 61, 23, 7}
	if _, err := e.Prefill([][]int32{seq}, c, false); err != nil {
		t.Fatal(err)
	}
	got, _, _ := c.Result()
	x := got[0].Tensors["hidden_states.1"].F32()
	mx := float32(0)
	for _, v := range x {
		mx = max(mx, v, -v)
	}
	for i := 4 * 96; i < len(x); i += 7 {
		x[i] += 0.01 * mx
	}
	ids := make([]int64, len(seq))
	for i, v := range seq {
		ids[i] = int64(v)
	}
	named := []safetensors.Named{{Name: "input_ids", T: tensor.FromI64(ids, len(ids))}}
	for _, l := range []int{0, 1, 2} {
		k := fmt.Sprintf("hidden_states.%d", l)
		named = append(named, safetensors.Named{Name: k, T: got[0].Tensors[k]})
	}
	p := filepath.Join(t.TempDir(), "c.safetensors")
	if err := safetensors.WriteFile(p, named, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{Model: targetOf(e)})
	lines, departs := r.DiffLines()
	text := strings.Join(lines, "\n")
	if !departs || !strings.Contains(text, "first departure: layer 1 (hidden_states.1) from token 4") {
		t.Fatalf("%s", text)
	}
}

// llamaDims is the Llama fixture's config dimensions (testdata/hf/llama).
func llamaDims(t *testing.T) *model.Dims {
	t.Helper()
	d, err := modelpath.ConfigDims("../../testdata/hf/llama")
	if err != nil {
		t.Fatal(err)
	}
	return d
}
