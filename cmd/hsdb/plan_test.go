package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
)

// TestPlanCommandJSON: `hsdb plan --json` prints the plan PlanDir computes
// under the keys the issue names (ranks[].rank, weights_bytes, kv_bytes,
// activation_bytes, total_bytes; device_bytes; fits), and exits 1 when it
// does not fit (DeepSeek-V3 at --tp 8 on 8 GiB devices).
func TestPlanCommandJSON(t *testing.T) {
	dir := "../../testdata/configs/deepseek-v3"
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"plan", "--model", dir, "--tp", "8", "--device-memory", "8GiB", "--max-tokens", "2048", "--json"}, stdio{Out: &out, Err: &errOut})
	if code != 1 {
		t.Fatalf("exit %d, want 1 (does not fit); stderr %s", code, errOut.String())
	}
	var got struct {
		DeviceBytes *int64 `json:"device_bytes"`
		Fits        *bool  `json:"fits"`
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	var keyed struct {
		Ranks []map[string]int64 `json:"ranks"`
	}
	if err := json.Unmarshal(out.Bytes(), &keyed); err != nil {
		t.Fatal(err)
	}
	want, err := engine.PlanDir(dir, engine.PlanOptions{TP: 8, DeviceBytes: 8 << 30, Tokens: 2048})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeviceBytes == nil || *got.DeviceBytes != 8<<30 || got.Fits == nil || *got.Fits || len(keyed.Ranks) != 8 {
		t.Fatalf("device_bytes %v fits %v ranks %d:\n%s", got.DeviceBytes, got.Fits, len(keyed.Ranks), out.String())
	}
	for i, r := range keyed.Ranks {
		w := want.Ranks[i]
		if r["rank"] != int64(i) || r["weights_bytes"] != w.Weights || r["kv_bytes"] != w.KV || r["activation_bytes"] != w.Activations || r["total_bytes"] != w.Total {
			t.Errorf("rank %d: %v, want %+v", i, r, w)
		}
	}
}

// TestPlanCommandErrors: bad flags and absurd configs are one line on
// stderr naming the flag or field, exit 2 for usage (a --model path that
// is not there or no model's kind too) and 1 for the model.
func TestPlanCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plan", "--model", "x", "--device-memory", "lots"}, 2, `--device-memory: "lots"`},
		{[]string{"plan", "--model", "x", "--device-memory", "-5GB"}, 2, "--device-memory"},
		{[]string{"plan", "--model", "x", "--tp", "0"}, 2, "--tp 0"},
		{[]string{"plan", "--model", "x", "--dtype", "float7"}, 2, `--dtype "float7": weights can be kept as f32, bf16 or f16`},
		{[]string{"plan", "--model", "x", "--layers", "0-3"}, 2, "use --load-layers 0-3"},
		{[]string{"plan", "--model", "../../testdata/nothing-here"}, 2, "--model ../../testdata/nothing-here: stat ../../testdata/nothing-here: no such file or directory"},
		{[]string{"plan", "--model", "../../README.md"}, 2, "expected a directory with config.json and *.safetensors, or a llama2.c .bin checkpoint"},
	} {
		var out, errOut bytes.Buffer
		code := hsdbMain(c.args, stdio{Out: &out, Err: &errOut})
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
}

// TestParseBytes: decimal and binary units, as written on spec sheets.
func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"141GiB": 141 << 30, "141 GiB": 141 << 30, "80GB": 80e9, "96gb": 96e9, "1.5TiB": 3 << 39, "1073741824": 1 << 30, "512M": 512 << 20, "1048576": 1 << 20, "141B": 141} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	// A bare "141" (141 bytes, below any device) was planned against
	// as "its device has 141 B": a unit left out.
	for _, s := range []string{"", "GiB", "1e400GB", "0", "12 parsecs", "NaNGB", "141", "80", "1048575"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestPlanPipelineStages: `hsdb plan --pp 2` on the llama fixture (3
// layers, hidden 96, 8 heads and 2 kv heads of 12, intermediate 160,
// vocab 101, tied, f32) and the qwen3 fixture (the same but head_dim 16,
// q/k norms, untied) splits the layers as vLLM's get_pp_indices does (0-1
// and 2) and counts, by hand: a llama decoder layer 4·(96·96 + 2·96·24 +
// 96·96 + 3·160·96 + 2·96) = 277248 bytes, a qwen3 one 4·(128·96 +
// 2·32·96 + 96·128 + 3·160·96 + 2·96 + 2·16) = 308096; the embedding
// padded to 128 rows (vLLM's vocab padding to 64) 4·128·96 = 49152 on the
// first stage only, the final norm 384 and the head on the last only, as
// vLLM places them — the tied head is the embedding, so llama's last stage
// holds the embedding too, qwen3's its own lm_head of the same size; the
// KV cache per layer for one sequence of max_position_embeddings 64
// tokens (the default --seq-len, --max-tokens 4096, stops there: no
// sequence is longer) 2·2·12·64·4 = 12288 bytes (llama) and 2·2·16·64·4 =
// 16384 (qwen3). --pp with --load-layers is refused.
func TestPlanPipelineStages(t *testing.T) {
	const embed, head, norm = 4 * 128 * 96, 4 * 128 * 96, 4 * 96
	for _, c := range []struct {
		name      string
		layer, kv int64
		last      int64 // the last stage's ends
	}{
		{"llama", 4 * (96*96 + 2*96*24 + 96*96 + 3*160*96 + 2*96), 2 * 2 * 12 * 64 * 4, embed + norm},
		{"qwen3", 4 * (128*96 + 2*32*96 + 96*128 + 3*160*96 + 2*96 + 2*16), 2 * 2 * 16 * 64 * 4, head + norm},
	} {
		var out, errOut bytes.Buffer
		code := hsdbMain([]string{"plan", "--model", "../../testdata/hf/" + c.name, "--pp", "2", "--json"}, stdio{Out: &out, Err: &errOut})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, errOut.String())
		}
		var got struct {
			Stages []struct {
				Stage  int    `json:"stage"`
				Layers string `json:"layers"`
				Plan   struct {
					Ranks []map[string]int64 `json:"ranks"`
				} `json:"plan"`
			} `json:"stages"`
			PP   int  `json:"pipeline_stages"`
			Fits bool `json:"fits"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%v: %s", err, out.String())
		}
		want := []struct {
			layers string
			n      int64
			ends   int64
		}{{"0-1", 2, embed}, {"2", 1, c.last}}
		if got.PP != 2 || !got.Fits || len(got.Stages) != 2 {
			t.Fatalf("%s: %s", c.name, out.String())
		}
		for i, w := range want {
			st := got.Stages[i]
			if st.Stage != i || !strings.HasPrefix(st.Layers, w.layers) || len(st.Plan.Ranks) != 1 {
				t.Errorf("%s stage %d: %+v, want layers %s", c.name, i, st, w.layers)
				continue
			}
			r := st.Plan.Ranks[0]
			if r["weights_bytes"] != w.n*c.layer+w.ends || r["kv_bytes"] != w.n*c.kv {
				t.Errorf("%s stage %d: weights %d kv %d, want %d and %d", c.name, i, r["weights_bytes"], r["kv_bytes"], w.n*c.layer+w.ends, w.n*c.kv)
			}
		}
	}
	var out, errOut bytes.Buffer
	errOut.Reset()
	if code := hsdbMain([]string{"plan", "--model", "../../testdata/hf/llama", "--pp", "2", "--load-layers", "0-1"}, stdio{Out: &out, Err: &errOut}); code != 2 || !strings.Contains(errOut.String(), "--load-layers") {
		t.Errorf("--pp with --load-layers: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := hsdbMain([]string{"plan", "--model", "../../testdata/hf/llama", "--pp", "4"}, stdio{Out: &out, Err: &errOut}); code != 2 || !strings.Contains(errOut.String(), "3 decoder layers") {
		t.Errorf("--pp 4 of 3 layers: exit %d, %q", code, errOut.String())
	}
}

// TestPlanPipelineStagesAdvice: DeepSeek-V3's released config (61 decoder
// layers) at --pp 2 --tp 2 does not fit an H200. The stages are vLLM's
// get_pp_indices split, derived by hand: 61 // 2 = 30 layers per stage,
// the one left over added to the stage before the last → 0-30 and 31-60.
// The refusal's advice names what --pp accepts (more stages or ranks), not
// --load-layers, which --pp refuses; without --pp it still names
// --load-layers. --pp 0 and negative are usage errors (exit 2); an error
// of the model at --tp (not of a stage) names no stage.
func TestPlanPipelineStagesAdvice(t *testing.T) {
	var out, errOut bytes.Buffer
	code := hsdbMain([]string{"plan", "--model", "../../testdata/configs/deepseek-v3", "--tp", "2", "--pp", "2"}, stdio{Out: &out, Err: &errOut})
	text := out.String()
	if code != 1 || !strings.Contains(text, "stage 0: decoder layers 0-30\n") || !strings.Contains(text, "stage 1: decoder layers 31-60\n") ||
		strings.Count(text, "fits: no, ") != 2 || strings.Count(text, stageAdvice) != 2 || strings.Contains(text, "--load-layers") {
		t.Errorf("--pp 2: exit %d\n%s%s", code, text, errOut.String())
	}
	out.Reset()
	code = hsdbMain([]string{"plan", "--model", "../../testdata/configs/deepseek-v3", "--tp", "2"}, stdio{Out: &out, Err: &errOut})
	if code != 1 || !strings.Contains(out.String(), "--load-layers A-B") {
		t.Errorf("no --pp: exit %d\n%s", code, out.String())
	}
	// The llama fixture's 8 heads do not split over 3 ranks: the model's
	// error at that --tp, no stage's, and a usage error (exit 2, said
	// before any plan as every command says it: TestModelFitUsage).
	errOut.Reset()
	code = hsdbMain([]string{"plan", "--model", "../../testdata/hf/llama", "--pp", "3", "--tp", "3"}, stdio{Out: &out, Err: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "num_attention_heads 8 is not divisible by --tp 3") || strings.Contains(errOut.String(), "stage") {
		t.Errorf("--pp 3 --tp 3: exit %d, %q", code, errOut.String())
	}
	for _, pp := range []string{"0", "-1"} {
		errOut.Reset()
		code = hsdbMain([]string{"plan", "--model", "../../testdata/hf/llama", "--pp", pp}, stdio{Out: &out, Err: &errOut})
		if code != 2 || !strings.Contains(errOut.String(), "--pp "+pp+": want at least one stage") {
			t.Errorf("--pp %s: exit %d, %q", pp, code, errOut.String())
		}
	}
}

// TestPlanSharedHostHeadroom: `hsdb plan --device cpu` at --tp 2 said
// "every rank within 1.15 GB (the fullest has 576 MiB left)" although the
// CPU ranks share the host: the fit line names the ranks sharing it and
// the headroom left once all of them are counted, the device memory less
// the sum of the ranks' totals (from the JSON of the same plan, in MiB as
// the line prints it).
func TestPlanSharedHostHeadroom(t *testing.T) {
	args := []string{"plan", "--model", "../../testdata/hf/llama", "--tp", "2", "--device", "cpu", "--device-memory", "60MiB"}
	var out, js, errOut bytes.Buffer
	if code := hsdbMain(args, stdio{Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := hsdbMain(append(args, "--json"), stdio{Out: &js, Err: &errOut}); code != 0 {
		t.Fatalf("--json exit %d: %s", code, errOut.String())
	}
	var p struct {
		Ranks []struct {
			Total int64 `json:"total_bytes"`
		} `json:"ranks"`
	}
	if err := json.Unmarshal(js.Bytes(), &p); err != nil || len(p.Ranks) != 2 {
		t.Fatalf("%v: %s", err, js.String())
	}
	// What is left of 60 MiB, in MiB to three significant digits (it is
	// tens of MiB: two ranks of about 12 MiB).
	left := float64(60<<20-p.Ranks[0].Total-p.Ranks[1].Total) / (1 << 20)
	if !(left >= 10 && left < 100) {
		t.Fatalf("%.1f MiB left, want tens of MiB:\n%s", left, out.String())
	}
	want := "fits: yes, the 2 ranks sharing the host together within 60 MiB (" + strconv.FormatFloat(left, 'f', 1, 64) + " MiB left)"
	if !strings.Contains(out.String(), want) {
		t.Errorf("want %q in:\n%s", want, out.String())
	}
}
