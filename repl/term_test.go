package repl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/engine/tokenizer"
	"hsdb/inspect/client"
	hsdbg "hsdb/inspect/debug"
)

const (
	storiesBin = "../testdata/stories260K/stories260K.bin"
	storiesTok = "../testdata/stories260K/tok512.bin"
)

// fakeTerm drives a Term as a user would, colour off, collecting output.
// s is the session behind the Term's client, for tests that set it up or
// read it between commands.
type fakeTerm struct {
	*Term
	s   *hsdbg.Session
	t   *testing.T
	buf *bytes.Buffer
}

// newFakeOn returns a fakeTerm over s through its in-process client,
// printing to buf.
func newFakeOn(t *testing.T, s *hsdbg.Session, buf *bytes.Buffer) *fakeTerm {
	return &fakeTerm{Term: New(hsdbg.NewLocal(s), buf, Config{}), s: s, t: t, buf: buf}
}

func newFake(t *testing.T, tp int) *fakeTerm {
	t.Helper()
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	s := hsdbg.New(e)
	tok, err := tokenizer.LoadLlama2C(storiesTok)
	if err != nil {
		t.Fatal(err)
	}
	s.Tok = tok
	buf := &bytes.Buffer{}
	f := newFakeOn(t, s, buf)
	t.Cleanup(f.Close)
	return f
}

// Exec runs line and returns what it printed; a failing command fails the
// test.
func (f *fakeTerm) Exec(line string) string {
	f.t.Helper()
	f.buf.Reset()
	if err := f.Term.Exec(line); err != nil {
		f.t.Fatalf("%s: %v\noutput:\n%s", line, err, f.buf.String())
	}
	return f.buf.String()
}

// AssertExec runs line and checks that the output holds every want.
func (f *fakeTerm) AssertExec(line string, want ...string) string {
	f.t.Helper()
	out := f.Exec(line)
	for _, w := range want {
		if !strings.Contains(out, w) {
			f.t.Fatalf("%s: output lacks %q:\n%s", line, w, out)
		}
	}
	return out
}

// AssertError runs line and checks it fails with an error holding want and
// prints nothing else.
func (f *fakeTerm) AssertError(line, want string) {
	f.t.Helper()
	f.buf.Reset()
	err := f.Term.Exec(line)
	if err == nil || !strings.Contains(err.Error(), want) {
		f.t.Fatalf("%s: error %v, want %q\noutput:\n%s", line, err, want, f.buf.String())
	}
}

// jsonExec runs line with --json output and decodes each line.
func (f *fakeTerm) jsonExec(line string) []map[string]any {
	f.t.Helper()
	f.opts.json = true
	defer func() { f.opts.json = false }()
	out := f.Exec(line)
	var res []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			f.t.Fatalf("%s: not JSON: %q (%v)", line, l, err)
		}
		res = append(res, m)
	}
	return res
}

var batchCmd = "input ids 1,403,407,261,378,365 ; ids 1,400,281,350"

// grab copies every tensor of a site (step 0) on every rank through an
// independent hook on a separate engine: the reference for the numbers the
// REPL prints.
type grab struct {
	site string
	got  map[string][]*tensor.Tensor
	seen []string
}

func (g *grab) Want(ev *model.Event) bool { return ev.Step == 0 }
func (g *grab) Visit(ev *model.Event, ranks []*model.RankView) error {
	g.seen = append(g.seen, ev.Site.Path)
	if ev.Site.Path != g.site {
		return nil
	}
	g.got = map[string][]*tensor.Tensor{}
	for _, v := range ranks {
		for _, st := range v.Tensors {
			s := st.T.Shape()
			g.got[st.Name] = append(g.got[st.Name], v.Device.ToHost(st.T, 0, s[0], 0, tensor.Numel(s[1:])))
		}
	}
	return nil
}

var refSeqs = [][]int32{{1, 403, 407, 261, 378, 365}, {1, 400, 281, 350}}

func reference(t *testing.T, tp int, site string) *grab {
	t.Helper()
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	g := &grab{site: site}
	if _, err := e.Prefill(refSeqs, g, false); err != nil {
		t.Fatal(err)
	}
	return g
}

// twoPass computes mean, population std, min, max, absmax and L2 the
// textbook way (two passes) for checking.
func twoPass(v []float32) map[string]float64 {
	m := map[string]float64{"min": math.Inf(1), "max": math.Inf(-1)}
	var sum, sq float64
	for _, x := range v {
		f := float64(x)
		sum += f
		sq += f * f
		m["min"] = math.Min(m["min"], f)
		m["max"] = math.Max(m["max"], f)
		m["absmax"] = math.Max(m["absmax"], math.Abs(f))
	}
	mean := sum / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (float64(x) - mean) * (float64(x) - mean)
	}
	m["mean"], m["std"], m["l2"] = mean, math.Sqrt(ss/float64(len(v))), math.Sqrt(sq)
	return m
}

// parseRow splits a printed table row into fields.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows = append(rows, f)
		}
	}
	return rows
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(b), 1e-3) }

func TestPrintPerRankMatchesReference(t *testing.T) {
	for _, tp := range []int{1, 2} {
		f := newFake(t, tp)
		f.Exec(batchCmd)
		f.AssertExec("break layers.2", "Breakpoint 1 at layers.2 (1 site)")
		f.AssertExec("run", "Stopped at model.layers.2 (LlamaDecoderLayer)  step 0 (prefill)  tokens 10 (seq 0: 6, seq 1: 4)  [breakpoint 1]")
		ref := reference(t, tp, "model.layers.2")
		for _, name := range []string{"hidden_states", "residual", "stream"} {
			// Text: columns rank shape(2 fields) dtype shard mean std min max absmax l2 nan inf [Δ].
			rows := tableRows(f.AssertExec("print "+name, "model.layers.2 "+name))
			if len(rows) != 2+tp {
				t.Fatalf("tp %d %s: %d rows:\n%v", tp, name, len(rows), rows)
			}
			for r := range tp {
				row := rows[2+r]
				want := twoPass(ref.got[name][r].F32())
				if row[0] != strconv.Itoa(r) || row[1]+" "+row[2] != "[10, 64]" || row[3] != "f32" || row[4] != "replicated" {
					t.Fatalf("row %v", row)
				}
				for i, s := range []string{"mean", "std", "min", "max", "absmax", "l2"} {
					v, _ := strconv.ParseFloat(row[5+i], 64)
					if !near(v, want[s], 1e-3) { // 4 significant digits printed
						t.Errorf("tp %d %s rank %d %s: printed %v, reference %v", tp, name, r, s, v, want[s])
					}
				}
				if row[11] != "0" || row[12] != "0" || (r > 0 && row[13] != "0") {
					t.Errorf("nan/inf/Δ %v", row)
				}
			}
			// JSON: the same fields at full precision.
			res := f.jsonExec("print " + name)
			ranks := res[0]["result"].(map[string]any)["ranks"].([]any)
			for r, x := range ranks {
				want := twoPass(ref.got[name][r].F32())
				got := x.(map[string]any)
				for _, s := range []string{"mean", "std", "min", "max", "absmax", "l2"} {
					if !near(got[s].(float64), want[s], 1e-9) {
						t.Errorf("json tp %d %s rank %d %s: %v want %v", tp, name, r, s, got[s], want[s])
					}
				}
			}
		}
		// --seq 1 --tokens 1:3 --rank R: tokens 7 and 8 of the batch.
		r := tp - 1
		res := f.jsonExec("print stream --seq 1 --tokens 1:3 --rank " + strconv.Itoa(r))
		got := res[0]["result"].(map[string]any)["ranks"].([]any)[0].(map[string]any)
		want := twoPass(ref.got["stream"][r].F32()[7*64 : 9*64])
		if len(res[0]["result"].(map[string]any)["ranks"].([]any)) != 1 || !near(got["mean"].(float64), want["mean"], 1e-9) || got["count"].(float64) != 128 {
			t.Fatalf("slice: %v want %v", got, want)
		}
		// Values: print stream[3, :4] is row 3, columns 0..3 on every rank
		// (the replicated copies, equal, once: TestValuesSameRanksOnce).
		head := "rank 0  [3:4, 0:4]  replicated\n"
		if tp > 1 {
			head = fmt.Sprintf("ranks 0-%d  [3:4, 0:4]  replicated, the same on each\n", tp-1)
		}
		out := f.AssertExec("print stream[3, :4]", head)
		v := ref.got["stream"][0].F32()[3*64 : 3*64+4]
		wantLine := "  3: [" + strings.Join([]string{g4(v[0]), g4(v[1]), g4(v[2]), g4(v[3])}, ", ") + "]"
		if !strings.Contains(out, wantLine) {
			t.Fatalf("values:\n%s\nwant %s", out, wantLine)
		}
	}
}

func g4(f float32) string { return strconv.FormatFloat(float64(f), 'g', 4, 64) }

// TestShardedPrintHasGatheredRow: at tp 2, gate is column-parallel: two
// shard rows and a gathered row whose statistics are those of the two
// shards side by side.
func TestShardedPrintHasGatheredRow(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.3.mlp.gate_up_proj")
	f.Exec("run")
	out := f.AssertExec("print gate", "sharded(dim=-1, 0:86 of 172)", "sharded(dim=-1, 86:172 of 172)", "gathered  [10, 172]")
	ref := reference(t, 2, "model.layers.3.mlp.gate_up_proj")
	var full []float32
	for r := range 10 {
		full = append(full, ref.got["gate"][0].F32()[r*86:(r+1)*86]...)
		full = append(full, ref.got["gate"][1].F32()[r*86:(r+1)*86]...)
	}
	want := twoPass(full)
	rows := tableRows(out)
	g := rows[len(rows)-1]
	if mean, _ := strconv.ParseFloat(g[5], 64); g[0] != "gathered" || !near(mean, want["mean"], 1e-3) {
		t.Fatalf("gathered row %v, want mean %v", g, want["mean"])
	}
	// The ranks command calls them shards of one tensor.
	f.AssertExec("ranks gate", "0-1    shard of", "rank 0 holds columns 0:86, rank 1 columns 86:172 of 172")
	f.AssertExec("ranks input", "0-1    equal")
}

// TestHistTopMatchReference: hist's bin counts and top's channels agree
// with counts and maxima computed here from the reference tensor.
func TestHistTopMatchReference(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.4")
	f.Exec("run")
	v := reference(t, 1, "model.layers.4").got["stream"][0].F32()
	// hist: 20 bins over [min, max]; count by hand.
	st := twoPass(v)
	w := (st["max"] - st["min"]) / 20
	counts := make([]int, 20)
	for _, x := range v {
		i := min(int((float64(x)-st["min"])/w), 19)
		counts[i]++
	}
	res := f.jsonExec("hist stream")
	got := res[0]["result"].(map[string]any)["hist"].(map[string]any)["counts"].([]any)
	for i, c := range got {
		if int(c.(float64)) != counts[i] {
			t.Fatalf("bin %d: %v want %v (all %v)", i, c, counts[i], counts)
		}
	}
	f.AssertExec("hist stream", "rank 0 (replicated) [10, 64]", "█")
	// top 3: the columns with the largest |value|, by a direct scan.
	type cv struct {
		col, row int
		v        float64
	}
	best := make([]cv, 64)
	for i, x := range v {
		c := i % 64
		if math.Abs(float64(x)) > math.Abs(best[c].v) {
			best[c] = cv{c, i / 64, float64(x)}
		}
	}
	for i := range best {
		for j := i + 1; j < len(best); j++ {
			if math.Abs(best[j].v) > math.Abs(best[i].v) {
				best[i], best[j] = best[j], best[i]
			}
		}
	}
	res = f.jsonExec("top stream 3")
	ch := res[0]["result"].(map[string]any)["channels"].([]any)
	for i, c := range ch {
		m := c.(map[string]any)
		if int(m["channel"].(float64)) != best[i].col || m["value"].(float64) != best[i].v || int(m["token"].(float64)) != best[i].row {
			t.Fatalf("top %d: %v want %+v", i, m, best[i])
		}
	}
	// token row -> (seq, pos): rows 0-5 are seq 0, 6-9 seq 1.
	seq, pos := 0, best[0].row
	if pos >= 6 {
		seq, pos = 1, pos-6
	}
	rows := tableRows(f.AssertExec("top stream 1", "#  channel   value  ×median  token  seq  pos"))
	if r := rows[len(rows)-1]; r[1] != strconv.Itoa(best[0].col) || r[4] != strconv.Itoa(best[0].row) || r[5] != strconv.Itoa(seq) || r[6] != strconv.Itoa(pos) {
		t.Fatalf("top row %v, want channel %d token %d seq %d pos %d", r, best[0].col, best[0].row, seq, pos)
	}
}

// TestBacktraceAgainstTree: bt lists the site and its ancestors from
// e.Tree, innermost first (#0 the site, as gdb numbers frames), then the
// root class, with shapes per rank.
func TestBacktraceAgainstTree(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("break layers.1.self_attn.o_proj")
	f.Exec("run")
	out := f.Exec("bt")
	var want []string
	for s := f.s.Tree().Site("model.layers.1.self_attn.o_proj"); s != nil; s = s.Parent {
		want = append(want, s.Path+"  "+s.Class)
	}
	want = append(want, "(root)  "+f.s.Tree().Root.Class)
	lines := strings.Split(out, "\n")
	j := 0
	for _, l := range lines {
		if j < len(want) && strings.Contains(l, want[j]) && strings.HasPrefix(l, "#"+strconv.Itoa(j)) {
			j++
		}
	}
	if j != len(want) {
		t.Fatalf("bt:\n%s\nwant frames %v", out, want)
	}
	// o_proj's input is each rank's half of the attention output: [10, 32].
	if !strings.Contains(out, "in: [10, 32]") || !strings.Contains(out, "out: input [10, 32], partial [10, 64], output [10, 64]") {
		t.Fatalf("shapes:\n%s", out)
	}
}

// TestSteppingCommands: step, next, finish, until and an empty line
// repeating the last command, each stop checked against the tree's visit
// order.
func TestSteppingCommands(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("tbreak layers.0.self_attn.qkv_proj")
	f.AssertExec("run", "Stopped at model.layers.0.self_attn.qkv_proj", "[breakpoint 1]")
	sites := f.s.Tree().Sites
	i := f.s.Tree().Site("model.layers.0.self_attn.qkv_proj").Index
	f.AssertExec("step", "Stopped at "+sites[i+1].Path+" ", "[step]")
	f.AssertExec("", "Stopped at "+sites[i+2].Path+" ", "[step]") // empty line repeats step
	f.AssertExec("finish", "Stopped at model.layers.0.self_attn (LlamaAttention)", "[finish model.layers.0.self_attn]")
	f.AssertExec("next", "Stopped at model.layers.0.post_attention_layernorm ")
	f.AssertExec("n", "Stopped at model.layers.0.mlp ")
	f.AssertExec("n", "Stopped at model.layers.0 ")
	f.AssertExec("until lm_head", "Stopped at lm_head (ParallelLMHead)", "[until lm_head]")
	f.AssertExec("print logits", "sharded(dim=-1, 0:256 of 512)", "gathered  [2, 512]")
	f.AssertExec("c", "Finished: prefill", "seq 0: 6 tokens, next ", "seq 1: 4 tokens, next ")
	f.AssertExec("info break", "no breakpoints or watches")
	f.AssertError("step", "not stopped")
}

// TestGenDecodes: gen after run decodes greedily, stopping at a breakpoint
// in each decode step; the tokens equal the engine's own Generate.
func TestGenDecodes(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.AssertExec("run", "Finished: prefill")
	f.Exec("break lm_head")
	f.AssertExec("gen 2", "Stopped at lm_head", "step 1 (decode)  tokens 2 (seq 0: 1, seq 1: 1)")
	f.AssertExec("c", "step 2 (decode)")
	out := f.AssertExec("c", "Finished: 2 decode steps")
	e, _ := engine.LoadLlama2C(storiesBin, engine.Options{})
	want, err := e.Generate(refSeqs[0], engine.GenerateOptions{Steps: 6 + 2})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := tokenizer.LoadLlama2C(storiesTok)
	line := "seq 0: 8 tokens, generated [" + strconv.Itoa(int(want[0])) + ", " + strconv.Itoa(int(want[1])) + "] " + strconv.Quote(tok.Decode(want[:2])) + ", next " + strconv.Itoa(int(want[2]))
	if !strings.Contains(out, line) {
		t.Fatalf("gen:\n%s\nwant %s", out, line)
	}
	f.AssertError("gen x", "gen: want a number of decode steps")
}

// TestBreakConditionsAndWatch covers conditions on rank and statistics, a
// condition that never holds, watch, enable/disable/delete and info break.
func TestBreakConditionsAndWatch(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.AssertExec("break layers.* if rank == 1 && absmax(stream) > 0", "Breakpoint 1 at layers.* (5 sites) if rank == 1 && absmax(stream) > 0")
	f.AssertExec("break layers.*.mlp if nan", "Breakpoint 2 at layers.*.mlp (5 sites) if nan")
	f.AssertExec("run", "Stopped at model.layers.0 ", "breakpoint 1 (rank == 1 && absmax(stream) > 0: true on rank 1)")
	f.AssertExec("disable 1", " 1  break  n", " 2  break  y")
	f.AssertExec("c", "Finished: prefill") // no NaN anywhere: breakpoint 2 never fires
	// Watch: stream absmax crosses a threshold between layers; compute where.
	var am []float64
	for l := range 5 {
		am = append(am, twoPass(reference(t, 1, "model.layers."+strconv.Itoa(l)).got["stream"][0].F32())["absmax"])
	}
	thr := (am[0] + am[4]) / 2
	first := 0
	for am[first] <= thr {
		first++
	}
	f.AssertExec("watch stream absmax > "+strconv.FormatFloat(thr, 'f', 4, 64), "Watch 3: stream absmax > ")
	f.AssertExec("run", "Stopped at model.layers."+strconv.Itoa(first)+" ", "watch 3: stream absmax > ")
	f.AssertExec("info break", " 3  watch  y", "stream", "1")
	f.AssertExec("delete 3", "deleted watch 3; left:\n", " 1  break  n")
	f.AssertExec("enable", " 1  break  y")
	f.AssertExec("delete", "deleted breakpoint 1, breakpoint 2; no breakpoints or watches left")
}

// TestDisplayAndTrace: displays print at every stop; trace prints every
// site visited, in the tree's order.
func TestDisplayAndTrace(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.1")
	f.Exec("break layers.2")
	f.AssertExec("display stream --seq 0", "display 1: print stream --seq 0")
	f.AssertExec("run", "Stopped at model.layers.1", "display 1: model.layers.1 stream  step 0 (prefill)  rows 0:6 (seq 0)")
	f.AssertExec("c", "display 1: model.layers.2 stream")
	f.AssertExec("info display", "1   stream --seq 0")
	f.AssertExec("undisplay 1", "no displays")
	f.Exec("delete")
	f.AssertExec("trace on", "trace on")
	out := f.Exec("run")
	var visited []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "trace [0]") {
			fs := strings.Fields(l)
			visited = append(visited, fs[2])
		}
	}
	var want []string
	for _, s := range f.s.Tree().Sites {
		want = append(want, s.Path)
	}
	if strings.Join(visited, " ") != strings.Join(want, " ") {
		t.Fatalf("trace visited\n%v\nwant\n%v", visited, want)
	}
	if !strings.Contains(out, "model.layers.0.mlp.gate_up_proj (MergedColumnParallelLinear)  input [10, 64], gate [10, 172], up [10, 172]") {
		t.Fatalf("trace shapes:\n%s", out)
	}
	f.AssertExec("trace off", "trace off")
}

// TestInfoAndTree: facts checked against the engine's own tree and dims.
func TestInfoAndTree(t *testing.T) {
	f := newFake(t, 2)
	e := f.s.E
	f.AssertExec("info model", "LlamaForCausalLM (llama)", "hidden_size        64", "8 query, 4 key/value, head_dim 8",
		"parameters         "+strconv.FormatInt(e.Tree.Root.NumParams(), 10), "world size         2")
	f.AssertExec("info layers", "4  model.layers.4  LlamaDecoderLayer", "RMSNorm, LlamaAttention, RMSNorm, LlamaMLP")
	f.AssertExec("info ranks", "rank 1  cpu:1  activations f32", "  layers 0-4 (each split alike):\n    self_attn.q_proj.weight dim 0 [32:64] of 64")
	f.AssertExec("info memory", "rank", "kv cache")
	out := f.Exec("info sites")
	if n := len(tableRows(out)) - 1; n != len(e.Tree.Sites) {
		t.Fatalf("info sites: %d rows for %d sites", n, len(e.Tree.Sites))
	}
	// Tree of layer 3's MLP: 3 × [172, 64] weights = 33024 parameters;
	// gate_proj split on dim 0 into 86 rows per rank.
	f.AssertExec("tree layers.3.mlp", "mlp  LlamaMLP  33024 params", "· gate_proj.weight [172, 64]  split dim 0: r0 [86, 64] r1 [86, 64]",
		"down_proj  RowParallelLinear  11008 params\n    · weight [64, 172]  split dim 1: r0 [64, 86] r1 [64, 86]")
	f.AssertError("tree layers.9", "matches no site")
	f.AssertError("info nonsense", "info: want one of model")
}

// TestInputForms: ids, text (tokenizer with BOS), JSON lines, and errors.
func TestInputForms(t *testing.T) {
	f := newFake(t, 1)
	tok, _ := tokenizer.LoadLlama2C(storiesTok)
	ids, _ := tok.Encode("Once upon a time")
	want := "1"
	for _, id := range ids {
		want += ", " + strconv.Itoa(int(id))
	}
	f.AssertExec(`input text "Once upon a time" ; ids 1,2`, "2 sequences", "seq 0: ["+want+"]", `"Once upon a time"`, "seq 1: [1, 2]")
	dir := t.TempDir()
	path := dir + "/b.jsonl"
	writeFile(t, path, "{\"text\": \"Once upon a time\"}\n\n{\"input_ids\": [1, 5, 6]}\n")
	f.AssertExec("input file "+path, "2 sequences, "+strconv.Itoa(len(ids)+1+3)+" tokens", "seq 1: [1, 5, 6]")
	writeFile(t, path, "{\"input_ids\": [1, 5]}\n{\"tokens\": [1]}\n")
	f.AssertError("input file "+path, path+":2: want {\"text\": ...} or {\"input_ids\": [...]}")
	f.AssertError("input ids 1,x", `item 2 "x" is not an integer`)
	f.AssertError("input ids 1,600", "token id 600 (sequence 0, token 1) is outside the vocabulary [0, 512)")
	f.AssertError("input words 1", `"words": want ids, text or file`)
	f.s.Tok = nil
	f.AssertError(`input text "hi"`, "this model has no usable tokenizer")
}

func TestOptionsAndHelp(t *testing.T) {
	f := newFake(t, 1)
	f.Exec(batchCmd)
	f.Exec("break layers.0")
	f.Exec("run")
	f.Exec("set precision 2")
	f.Exec("set stats mean,zeros")
	rows := tableRows(f.Exec("print stream"))
	if strings.Join(rows[1], " ") != "rank shape dtype shard mean zeros" || len(strings.TrimPrefix(rows[2][5], "-")) > 6 {
		t.Fatalf("%v", rows)
	}
	f.AssertExec("show precision", "precision  2")
	f.AssertExec("show", "colour", "errors     stop", "json")
	f.AssertError("set precision 99", "want an integer in [1, 17]")
	f.AssertError("set stats mean,median", `statistic "median"`)
	f.AssertError("set nope 1", `unknown option "nope"`)
	f.AssertExec("help", "running:", "  print (p)", "`help COMMAND` explains one.")
	f.AssertExec("help p", "print TENSOR[ROWS, COLS] [--rank R] [--seq S] [--tokens A:B]", "aliases: p")
	f.AssertExec("echo hello there", "hello there")
	if err := f.Term.Exec("quit"); !errors.Is(err, ErrQuit) {
		t.Fatalf("quit: %v", err)
	}
}

// TestErrorsKeepSession: each bad input gives one clear error and the
// session goes on.
func TestErrorsKeepSession(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.AssertError("frobnicate", `unknown command "frobnicate": `+"`help`"+` lists the commands`)
	f.AssertError("break layers.7", `"layers.7" matches no site of this model (layers 0-4`)
	f.AssertError("break layers.1 if absmax(residual >", "column 17: expected ')' after absmax(residual")
	f.AssertError("break layers.1 if", "`if` needs a condition")
	f.AssertError("watch stream absmax >> 3", "column 9: expected a number, a name or '(', found \">\"")
	f.AssertError("print stream", "not stopped")
	f.AssertError("run now", "run takes no arguments")
	f.Exec("break layers.0")
	f.Exec("run")
	f.AssertError("print stream --rank 2", "rank 2: the world has 2 ranks, 0-1")
	f.AssertError("print stream --rank -1", `--rank "-1": want a non-negative integer`)
	f.AssertError("print q", `model.layers.0 shows hidden_states, residual, stream, not "q"`)
	f.AssertError("print stream[99, 0]", "row index 99 is out of range for size 10")
	f.AssertError("print stream --tokens 3:20", "--tokens 3:20: the batch has 10 tokens")
	f.AssertError("print stream --color red", "unknown flag --color")
	f.AssertError("print", "which tensor? model.layers.0 shows hidden_states, residual, stream")
	f.AssertError("top stream 0", `K "0": want a positive integer`)
	f.AssertError("delete 9", "no breakpoint number 9")
	f.AssertError("until layers.99", "matches no site")
	// The session is still stopped where it was and goes on.
	f.AssertExec("print stream", "model.layers.0 stream")
	f.AssertExec("finish", "Stopped at model (LlamaModel)")
	f.AssertError("finish", "finish: model is outermost")
	f.AssertExec("c", "Finished: prefill")
}

// TestPanicInCommandRecovered: a command that panics is reported as an
// error and the session continues.
func TestPanicInCommandRecovered(t *testing.T) {
	f := newFake(t, 1)
	saved := commands
	t.Cleanup(func() { commands = saved })
	commands = append(append([]*command(nil), saved...), &command{aliases: []string{"boom"}, fn: func(*Term, string) error { panic("kaboom") }})
	f.AssertError("boom", "internal error in boom: kaboom")
	f.AssertExec("echo still here", "still here")
}

// TestCompletion: commands, sites one component at a time, tensors at the
// stop, options and info topics.
func TestCompletion(t *testing.T) {
	f := newFake(t, 1)
	c := completer{f.Term}
	do := func(line string) []string {
		cands, n := c.Do([]rune(line), len([]rune(line)))
		var out []string
		for _, r := range cands {
			out = append(out, line[len(line)-n:]+string(r))
		}
		return out
	}
	if got := do("pri"); strings.Join(got, "|") != "print " {
		t.Errorf("pri: %v", got)
	}
	if got := do("break layers."); len(got) != 5 || got[0] != "layers.0" || got[4] != "layers.4" {
		t.Errorf("break layers.: %v", got)
	}
	if got := do("break layers.3.m"); strings.Join(got, "|") != "layers.3.mlp" {
		t.Errorf("break layers.3.m: %v", got)
	}
	if got := do("info m"); strings.Join(got, "|") != "model |memory " {
		t.Errorf("info m: %v", got)
	}
	if got := do("break layers.1 if abs"); strings.Join(got, "|") != "absmax" {
		t.Errorf("cond: %v", got)
	}
	f.Exec(batchCmd)
	f.Exec("break layers.1.mlp.gate_up_proj")
	f.Exec("run")
	if got := do("print "); strings.Join(got, "|") != "input|gate|up" {
		t.Errorf("print at stop: %v", got)
	}
	if got := do("print gate --r"); strings.Join(got, "|") != "--rank " {
		t.Errorf("flags: %v", got)
	}
	if got := do("set col"); strings.Join(got, "|") != "colour " {
		t.Errorf("set: %v", got)
	}
	if got := do("source testdata/tp"); len(got) == 0 || !strings.HasPrefix(got[0], "testdata/tp") {
		t.Errorf("files: %v", got)
	}
}

// TestInterruptsDoubleCtrlC: a second Ctrl-C within a second quits; one
// after a pause does not.
func TestInterruptsDoubleCtrlC(t *testing.T) {
	var in interrupts
	t0 := mustTime("2026-01-01T00:00:00Z")
	if in.hit(t0) {
		t.Fatal("first Ctrl-C quits")
	}
	if in.hit(t0.Add(1500 * 1e6)) {
		t.Fatal("Ctrl-C 1.5 s later quits")
	}
	if !in.hit(t0.Add(2000 * 1e6)) {
		t.Fatal("Ctrl-C 0.5 s after another does not quit")
	}
}

// TestCtrlCDuringLongGen: an interrupt while `gen` runs (from the trace
// callback, as the signal goroutine would) stops at the next site; the
// session keeps going.
func TestCtrlCDuringLongGen(t *testing.T) {
	f := newFake(t, 2)
	f.Exec(batchCmd)
	f.Exec("run")
	n := 0
	f.s.SetTrace(true)
	f.s.OnTrace = func(client.TraceLine) {
		if n++; n == 100 {
			f.s.Interrupt()
		}
	}
	f.AssertExec("gen 50", "Stopped at ", "[interrupted]", "(decode)")
	f.s.SetTrace(false)
	f.AssertExec("bt", "#0  ", "  (root)  LlamaForCausalLM")
	f.AssertExec("c", "Finished: 50 decode steps")
}
