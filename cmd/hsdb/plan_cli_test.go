package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanEmbeddedModel: `hsdb plan` refused the embedded stories260K
// ("--model DIR is required") though --model means the same in every
// subcommand ("embedded" or empty for it, a llama2.c .bin too). Now it
// plans it, and the llama2.c checkpoint it came from, alike. Per rank at
// --tp 2, by hand from stories260K's config (hidden 64, intermediate 172,
// 5 layers, 8 heads and 4 kv heads of head_dim 8, vocab 512, f32, lm_head
// tied to the embeddings): embeddings 512/2 rows × 64; per layer q and o
// 64·64/2 each, k and v 32·64/2 each, gate, up and down 172/2·64 each, two
// norms of 64; the final norm 64: 130368 parameters, 521472 bytes. KV
// cache for one sequence of seq_len 512 tokens (the default --seq-len,
// --max-tokens 4096, stops at max_position_embeddings: no sequence is
// longer): 5 layers × (K and V) × 2 kv heads × 8 × 4 bytes per token =
// 327680 bytes.
func TestPlanEmbeddedModel(t *testing.T) {
	const hidden, inter, layers, vocab = 64, 172, 5, 512
	perLayer := hidden*hidden/2*2 + 32*hidden/2*2 + inter/2*hidden*3 + 2*hidden
	wantWeights := int64(4 * (vocab/2*hidden + layers*perLayer + hidden))
	wantKV := int64(512 * layers * 2 * 2 * 8 * 4)
	for _, model := range [][]string{nil, {"--model", "embedded"}, {"--model", "../../testdata/stories260K/stories260K.bin"}} {
		args := append(append([]string{"plan"}, model...), "--tp", "2", "--json")
		out, errs, code := runHsdb(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		var p struct {
			Ranks []struct {
				Weights int64 `json:"weights_bytes"`
				KV      int64 `json:"kv_bytes"`
			} `json:"ranks"`
			Arch string `json:"architecture"`
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if len(p.Ranks) != 2 || p.Arch != "LlamaForCausalLM" {
			t.Fatalf("%v: %d ranks of %q, want 2 of LlamaForCausalLM", args, len(p.Ranks), p.Arch)
		}
		for r, rk := range p.Ranks {
			if rk.Weights != wantWeights || rk.KV != wantKV {
				t.Errorf("%v: rank %d weights %d, KV %d bytes; want %d, %d", args, r, rk.Weights, rk.KV, wantWeights, wantKV)
			}
		}
	}
	out, errs, code := runHsdb(t, "plan", "--tp", "2")
	if want := "embedded:stories260K LlamaForCausalLM at --tp 2, "; code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("plan --tp 2: exit %d, want it to begin %q:\n%s%s", code, want, out, errs)
	}
}

// TestPlanTextOneLayerStageUnquantized: `hsdb plan --pp 2` on the llama
// fixture (3 layers; vLLM's get_pp_indices gives the remainder to the
// stage before the last: [2, 1]) headed its last stage "decoder layers
// 2-2", and an unquantized model's weights line read "quantized none;
// dense f32". Now: "decoder layer 2", and "weights: f32, none quantized"
// (the fixture is float32).
func TestPlanTextOneLayerStageUnquantized(t *testing.T) {
	out, errs, code := runHsdb(t, "plan", "--model", "../../testdata/hf/llama", "--pp", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, want := range []string{"\nstage 0: decoder layers 0-1\n", "\nstage 1: decoder layer 2\n", "\nweights: f32, none quantized; activations and KV cache f32\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quantized none") || strings.Contains(out, "2-2") {
		t.Errorf("old wording left:\n%s", out)
	}
}

// TestPlanHelpDevice: `hsdb plan --help` described --device with the
// loader's words ("default: cuda where hsdb-cuda-worker is installed ...
// else cpu") and then "(default cuda)": a plan probes no device and plans
// for cuda unless told cpu. Its help now says what each choice plans.
func TestPlanHelpDevice(t *testing.T) {
	out, errs, code := runHsdb(t, "plan", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	help := out + errs
	want := "--device string        the backend planned for: cuda (quantized weights kept as stored, a device per rank) or cpu (quantized weights dequantized on load, activations f32, the ranks sharing the host); no device is probed (default cuda)"
	// The meanings' column is as wide as the longest "--name TYPE":
	// compared with runs of spaces as one.
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	if !strings.Contains(flat(help), flat(want)) || strings.Contains(help, "where hsdb-cuda-worker is installed") {
		t.Errorf("want %q, and not the loader's default, in:\n%s", want, help)
	}
}

// TestPlanCPUDefaultMemoryNote: `hsdb plan --device cpu` compared the
// ranks sharing the host with --device-memory's default, an H200's 141
// GiB, and a refusal said "but 141.0 GiB is available" as if the host had
// been measured. Without --device-memory the plan now says what it compared
// with; with it, or on cuda, nothing.
func TestPlanCPUDefaultMemoryNote(t *testing.T) {
	const note = "note: --device cpu is checked against --device-memory, whose default is an H200's 141 GiB, not this host's memory: give the host's (e.g. --device-memory 512GiB)"
	for _, c := range []struct {
		args []string
		note bool
	}{
		{[]string{"--device", "cpu", "--tp", "2"}, true},
		{[]string{"--device", "cpu", "--pp", "2"}, true},
		{[]string{"--device", "cpu", "--device-memory", "64GiB"}, false},
		{[]string{"--tp", "2"}, false},
	} {
		out, errs, code := runHsdb(t, append([]string{"plan"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s%s", c.args, code, out, errs)
		}
		if strings.Contains(out, note) != c.note {
			t.Errorf("%v: note %v, want %v:\n%s", c.args, !c.note, c.note, out)
		}
	}
}

// TestPlanSaysEP: `hsdb plan --ep` planned the routed experts whole per
// rank, but neither its header ("... at --tp 8, from ...") nor its JSON
// said so: a plan at --ep read as one without. Kimi-K2.5's released
// config (testdata/configs/kimi-k2.5, 384 routed experts) at --tp 8.
func TestPlanSaysEP(t *testing.T) {
	for _, ep := range []bool{false, true} {
		args := []string{"plan", "--model", "../../testdata/configs/kimi-k2.5", "--tp", "8"}
		if ep {
			args = append(args, "--ep")
		}
		out, errs, code := runHsdb(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		head := strings.SplitN(out, "\n", 2)[0]
		if got := strings.Contains(head, "at --tp 8 --ep (routed experts whole per rank),"); got != ep {
			t.Errorf("--ep %v: header %q", ep, head)
		}
		out, errs, code = runHsdb(t, append(args, "--json")...)
		var p struct {
			EP *bool `json:"expert_parallel"`
		}
		if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.EP == nil || *p.EP != ep {
			t.Errorf("--ep %v --json: exit %d, %v, expert_parallel %v: %s", ep, code, err, p.EP, errs)
		}
	}
}

// TestPlanRefusesWorkerFlags: plan starts no worker, yet took --workers,
// --listen, --worker-bin, --worker-links and --worker-timeout, listed them
// in its --help and ignored them. They are unknown flags there now (exit
// 2), and --pp is described as stages planned, not workers started.
func TestPlanRefusesWorkerFlags(t *testing.T) {
	for _, f := range [][]string{{"--workers"}, {"--listen", ":0"}, {"--worker-bin", "x"}, {"--worker-links", "hub"}, {"--worker-timeout", "1s"}} {
		_, errs, code := runHsdb(t, append([]string{"plan"}, f...)...)
		if code != 2 || !strings.Contains(errs, "unknown flag "+f[0]) {
			t.Errorf("plan %v: exit %d, stderr %q; want 2, unknown flag", f, code, errs)
		}
	}
	out, errs, _ := runHsdb(t, "plan", "--help")
	if strings.Contains(out+errs, "worker") {
		t.Errorf("plan --help names workers:\n%s%s", out, errs)
	}
}
