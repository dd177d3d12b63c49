package repl

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
	hsdbg "hsdb/inspect/debug"
)

func openFake(t *testing.T, dir string, o engine.Options) *fakeTerm {
	t.Helper()
	e, err := engine.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, hsdbg.New(e), buf)
	t.Cleanup(f.Close)
	return f
}

// rankSection returns the lines of `info ranks` that belong to rank r.
func rankSection(out string, r int) string {
	start := strings.Index(out, fmt.Sprintf("rank %d  ", r))
	if start < 0 {
		return ""
	}
	rest := out[start+1:]
	if end := strings.Index(rest, fmt.Sprintf("\nrank %d  ", r+1)); end >= 0 {
		rest = rest[:end+1]
	}
	return out[start:start+1] + rest
}

// TestInfoRanksExpertsPerRank: DeepSeek-V3's fixture (8 routed experts,
// first_k_dense_replace 1) with --ep over 2 and 4 ranks: vLLM's linear
// placement gives rank r experts [r·8/w, (r+1)·8/w) whole. info ranks says
// so per rank, shows the dense layer 0 apart from the MoE layers 1-3
// (split alike), and --moe tp gives every rank all 8 experts with rows
// [r·36/w, (r+1)·36/w) of moe_intermediate_size 36.
func TestInfoRanksExpertsPerRank(t *testing.T) {
	for _, world := range []int{2, 4} {
		f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: world, EP: true})
		out := f.Exec("info ranks")
		per := 8 / world
		for r := range world {
			sec := rankSection(out, r)
			want := "  layers 1-3 (each split alike):\n"
			x := fmt.Sprintf("    mlp.experts: experts %d-%d of 8, whole (expert parallel)\n", r*per, (r+1)*per-1)
			if !strings.Contains(sec, "  layer 0:\n") || !strings.Contains(sec, want) || !strings.Contains(sec, x) {
				t.Fatalf("ep %d rank %d: want %q and %q in\n%s", world, r, want, x, sec)
			}
		}
		ranks := f.jsonExec("info ranks")[0]["result"].([]any)
		last := ranks[world-1].(map[string]any)["layers"].([]any)[1].(map[string]any)
		ex := last["experts"].([]any)[0].(map[string]any)
		if fmt.Sprint(ex["experts"]) != fmt.Sprint(ids(8-per, 8)) || ex["whole"] != true {
			t.Fatalf("ep %d JSON experts %v", world, ex)
		}
	}
	f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 2})
	out := f.Exec("info ranks")
	for r := range 2 {
		x := fmt.Sprintf("    mlp.experts: all 8 experts, rows [%d:%d] of 36 of each (tensor parallel)\n", r*18, (r+1)*18)
		if !strings.Contains(rankSection(out, r), x) {
			t.Fatalf("tp experts rank %d: want %q in\n%s", r, x, out)
		}
	}
}

func ids(lo, hi int) []any {
	var out []any
	for i := lo; i < hi; i++ {
		out = append(out, float64(i))
	}
	return out
}

// TestInfoRanksVocabPadding: a vocabulary of 101 is padded to 128 (vLLM
// pads to a multiple of 64) and split evenly; info ranks shows each rank's
// real rows of embed_tokens and lm_head with the padded range where it
// differs: over 4 ranks rank 3 has [96:101] (padded [96:128]); over 8
// (llama fixture, tied embeddings: no lm_head weight) rank 6 [96:101]
// (padded [96:112]) and rank 7 none.
func TestInfoRanksVocabPadding(t *testing.T) {
	f := openFake(t, "../testdata/hf/deepseek_v3", engine.Options{TP: 4})
	out := f.Exec("info ranks")
	for r, want := range []string{"[0:32] of 101\n", "[32:64] of 101\n", "[64:96] of 101\n", "[96:101] of 101 (padded [96:128])\n"} {
		for _, w := range []string{"embed_tokens.weight dim 0 " + want, "lm_head.weight dim 0 " + want} {
			if !strings.Contains(rankSection(out, r), w) {
				t.Fatalf("rank %d: want %q in\n%s", r, w, rankSection(out, r))
			}
		}
	}
	f = openFake(t, "../testdata/hf/llama", engine.Options{TP: 8})
	out = f.Exec("info ranks")
	if s := rankSection(out, 6); !strings.Contains(s, "embed_tokens.weight dim 0 [96:101] of 101 (padded [96:112])\n") {
		t.Fatalf("rank 6:\n%s", s)
	}
	if s := rankSection(out, 7); !strings.Contains(s, "embed_tokens.weight dim 0 [101:101] of 101 (padded [112:128]): padding only\n") {
		t.Fatalf("rank 7:\n%s", s)
	}
	sh := f.jsonExec("info ranks")[0]["result"].([]any)[7].(map[string]any)["shards"].([]any)[0].(map[string]any)
	if sh["lo"].(float64) != 101 || sh["hi"].(float64) != 101 || fmt.Sprint(sh["padded"]) != "[112 128]" {
		t.Fatalf("JSON shard %v", sh)
	}
}

// TestLogitsGatherUnevenShards: the llama fixture at --tp 8 stops at
// lm_head with ranks holding 16, ..., 16, 5 and 0 logits columns (vocab
// 101, padding dropped). print shows each rank's width, "—" for the empty
// rank's statistics and a gathered [1, 101] row whose mean is that of the
// engine's own logits at tp 1 (the reference); values of a column range
// outside a rank's columns leave that rank without values instead of
// failing.
func TestLogitsGatherUnevenShards(t *testing.T) {
	ref, err := engine.Open("../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ref.Prefill([][]int32{{1, 2, 3}}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := twoPass(l.Row(0))
	f := openFake(t, "../testdata/hf/llama", engine.Options{TP: 8})
	f.Exec("input ids 1,2,3")
	f.Exec("break lm_head")
	f.Exec("run")
	rows := tableRows(f.Exec("print logits"))
	widths := []string{"16]", "16]", "16]", "16]", "16]", "16]", "5]", "0]"}
	for r, w := range widths {
		if rows[2+r][0] != strconv.Itoa(r) || rows[2+r][2] != w {
			t.Fatalf("rank %d row %v, want width %s", r, rows[2+r], w)
		}
	}
	// rank [1, 0] f32 sharded(dim=-1, 101:101 of 101) mean ... l2: the label is 4 fields.
	if r7 := strings.Join(rows[9][8:14], " "); r7 != "— — — — — —" {
		t.Fatalf("empty rank 7 statistics %q", r7)
	}
	g := rows[10]
	mean, err := strconv.ParseFloat(g[5], 64)
	if err != nil || g[0] != "gathered" || g[1]+" "+g[2] != "[1, 101]" || !(math.Abs(mean-want["mean"]) <= 1e-3*math.Max(math.Abs(want["mean"]), 1e-2)) {
		t.Fatalf("gathered row %v, want [1, 101] with mean %v", g, want["mean"])
	}
	out := f.AssertExec("print logits[0, 10:12]", "rank 6  sharded(dim=-1, 96:101 of 101)  no values: the index selects none of its 5 columns",
		"rank 7  sharded(dim=-1, 101:101 of 101)  no values: the index selects none of its 0 columns", "gathered  [0:1, 10:12]  full")
	wantG := fmt.Sprintf("  0: [%s, %s]", g4(l.Row(0)[10]), g4(l.Row(0)[11]))
	if !strings.Contains(out[strings.Index(out, "gathered"):], wantG) {
		t.Fatalf("gathered values: want %s in\n%s", wantG, out)
	}
}
