package repl

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/safetensors"
	hsdbg "hsdb/inspect/debug"
	"hsdb/inspect/stats"
)

// TestDeepseekSession drives the debugger on the DeepSeek-V3 fixture at
// --tp 2 with expert parallelism, as issue 5 asks: a stop at
// layers.1.self_attn prints the latent c_kv on both ranks as [tokens,
// kv_lora_rank=40] with HF's statistics, and a stop at layers.1.mlp.gate
// shows the top-k expert ids and each rank's expert load, both checked
// against HF transformers' router (testdata/hf/deepseek_v3/
// reference.safetensors).
func TestDeepseekSession(t *testing.T) {
	const dir = "../testdata/hf/deepseek_v3"
	get, ids, parts := hfReference(t, dir)
	T := len(ids)
	e, err := engine.Open(dir, engine.Options{TP: 2, EP: true})
	if err != nil {
		t.Fatal(err)
	}
	buf := &bytes.Buffer{}
	f := newFakeOn(t, hsdbg.New(e), buf)
	t.Cleanup(f.Close)
	f.Exec("input " + strings.Join(parts, " ; "))
	f.Exec("break layers.1.self_attn")
	f.Exec("break layers.1.mlp.gate")
	f.AssertExec("run", "Stopped at model.layers.1.self_attn (DeepseekV2MLAAttention)")

	want := stats.Of(get("attn.1.c_kv"))
	rows := tableRows(f.Exec("print c_kv"))
	shape := fmt.Sprintf("[%d, 40]", T)
	for r := range 2 {
		row := findRow(t, rows, fmt.Sprint(r))
		if row[1]+" "+row[2] != shape {
			t.Fatalf("rank %d row %v: want shape %s", r, row, shape)
		}
		if !strings.Contains(strings.Join(row, " "), "replicated") {
			t.Fatalf("rank %d c_kv not replicated: %v", r, row)
		}
		if got := f.Exec("print c_kv --rank " + fmt.Sprint(r)); !strings.Contains(got, g4(float32(want.Mean))) || !strings.Contains(got, g4(float32(want.AbsMax))) {
			t.Fatalf("rank %d: mean %s / absmax %s of HF's c_kv not in\n%s", r, g4(float32(want.Mean)), g4(float32(want.AbsMax)), got)
		}
	}

	f.AssertExec("continue", "Stopped at model.layers.1.mlp.gate")
	hfIDs := get("router.1.topk_ids")
	out := f.Exec(fmt.Sprintf("print topk_ids[0:%d, :] --rank 0", T))
	for tk := range T {
		set := []int{int(hfIDs[2*tk]), int(hfIDs[2*tk+1])}
		sort.Ints(set)
		line := fmt.Sprintf("%d: [%d, %d]", tk, set[0], set[1])
		alt := fmt.Sprintf("%d: [%d, %d]", tk, set[1], set[0])
		if !strings.Contains(out, line) && !strings.Contains(out, alt) {
			t.Fatalf("token %d: HF chose experts %v; hsdb printed\n%s", tk, set, out)
		}
	}
	// Per-rank expert load: with --ep over 2 ranks rank 0 owns experts
	// 0-3 and rank 1 experts 4-7; each counts the tokens HF routed there.
	load := make([]int, 8)
	for _, id := range hfIDs {
		load[int(id)]++
	}
	out = f.Exec("print local_load[0, :]")
	for r := range 2 {
		var want []string
		for _, n := range load[4*r : 4*r+4] {
			want = append(want, fmt.Sprint(n))
		}
		if !strings.Contains(out, "0: ["+strings.Join(want, ", ")+"]") {
			t.Fatalf("rank %d load %v not in\n%s", r, want, out)
		}
	}
	if rows := tableRows(f.Exec("print local_load")); len(findRow(t, rows, "gathered")) == 0 {
		t.Fatal("no gathered row for the sharded expert load")
	}
}

func findRow(t *testing.T, rows [][]string, first string) []string {
	t.Helper()
	for _, r := range rows {
		if len(r) > 0 && r[0] == first {
			return r
		}
	}
	t.Fatalf("no row %q in %v", first, rows)
	return nil
}

// hfReference opens the HF fixture dir's reference.safetensors (closed
// when t ends) and returns a reader of its tensors as f32, its input_ids
// [tokens] and the batch as `input` takes it ("ids a,b,c" per sequence of
// seq_lens, in order).
func hfReference(t *testing.T, dir string) (get func(name string) []float32, ids []float32, parts []string) {
	t.Helper()
	ref, err := safetensors.Open(dir + "/reference.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ref.Close() })
	get = func(n string) []float32 {
		x, err := ref.Tensor(n)
		if err != nil {
			t.Fatal(err)
		}
		return x.ToF32()
	}
	ids, lens := get("input_ids"), get("seq_lens")
	off := 0
	for _, n := range lens {
		var s []string
		for _, id := range ids[off : off+int(n)] {
			s = append(s, fmt.Sprint(int(id)))
		}
		parts = append(parts, "ids "+strings.Join(s, ","))
		off += int(n)
	}
	return get, ids, parts
}

// stopAtGate opens the HF fixture dir with opts, inputs its reference
// batch (parts, from hfReference) and runs to model.layers.1.mlp.gate,
// the MoE router's stop.
func stopAtGate(t *testing.T, dir string, opts engine.Options, parts []string) *fakeTerm {
	t.Helper()
	e, err := engine.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeOn(t, hsdbg.New(e), &bytes.Buffer{})
	t.Cleanup(f.Close)
	f.Exec("input " + strings.Join(parts, " ; "))
	f.Exec("break layers.1.mlp.gate")
	f.AssertExec("run", "Stopped at model.layers.1.mlp.gate")
	return f
}
