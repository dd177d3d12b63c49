package debug

import (
	"errors"
	"math"
	"strings"
	"testing"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/client"
)

const storiesBin = "../../testdata/stories260K/stories260K.bin"

var twoSeqs = [][]int32{{1, 403, 407, 261, 378}, {1, 400, 281}}

func newSession(t testing.TB, tp int) *Session { t.Helper(); return newSessionOn(t, "cpu", tp) }

// newSessionOn is newSession on a device ("cpu" or "cuda").
func newSessionOn(t testing.TB, dev string, tp int) *Session {
	t.Helper()
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	s := New(e)
	if err := s.SetBatch(twoSeqs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	return s
}

// deepseekSession opens testdata/hf/deepseek_v3 (the tiny DeepSeek-V3
// fixture: MLA, a dense layer 0, MoE layers of 8 routed experts) on the
// CPU at tp ranks with batch seqs; engine and session end with the test.
func deepseekSession(t testing.TB, tp int, seqs [][]int32) *Session {
	t.Helper()
	e, err := engine.Open("../../testdata/hf/deepseek_v3", engine.Options{TP: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := New(e)
	t.Cleanup(s.Kill)
	if err := s.SetBatch(seqs); err != nil {
		t.Fatal(err)
	}
	return s
}

// expect returns a checker of a run command's result: a stop at site.
func expect(t testing.TB, site string) func(*client.Outcome, error) *client.Stop {
	return func(o *client.Outcome, err error) *client.Stop {
		t.Helper()
		return mustStop(t, o, err, site)
	}
}

func mustStop(t testing.TB, o *client.Outcome, err error, site string) *client.Stop {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if o == nil || o.Stop == nil {
		t.Fatalf("want a stop at %s, got %+v", site, o)
	}
	if o.Stop.Site != site {
		t.Fatalf("stopped at %s (%v), want %s", o.Stop.Site, o.Stop.Reasons, site)
	}
	return o.Stop
}

// siteCopy is an independent hook that copies every tensor of one site to
// the host on every rank: the reference the session's numbers are checked
// against.
type siteCopy struct {
	site string
	got  map[string][]*tensor.Tensor
}

func (c *siteCopy) Want(ev *model.Event) bool { return ev.Site.Path == c.site && ev.Step == 0 }
func (c *siteCopy) Visit(ev *model.Event, ranks []*model.RankView) error {
	c.got = map[string][]*tensor.Tensor{}
	for _, v := range ranks {
		for _, st := range v.Tensors {
			s := st.T.Shape()
			c.got[st.Name] = append(c.got[st.Name], v.Device.ToHost(st.T, 0, s[0], 0, tensor.Numel(s[1:])))
		}
	}
	return nil
}

func reference(t *testing.T, tp int, site string) map[string][]*tensor.Tensor {
	return referenceOn(t, "cpu", tp, site)
}

// referenceOn is reference computed on a device by a separate engine.
func referenceOn(t *testing.T, dev string, tp int, site string) map[string][]*tensor.Tensor {
	e, err := engine.LoadLlama2C(storiesBin, engine.Options{TP: tp, Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := &siteCopy{site: site}
	if _, err := e.Prefill(twoSeqs, c, false); err != nil {
		t.Fatal(err)
	}
	return c.got
}

// naive statistics, two-pass, for checking.
func naive(v []float32) (mean, std, absmax float64) {
	for _, x := range v {
		mean += float64(x)
		absmax = math.Max(absmax, math.Abs(float64(x)))
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (float64(x) - mean) * (float64(x) - mean)
	}
	return mean, math.Sqrt(std / float64(len(v))), absmax
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

// TestBreakPrintMatchesReference: stopping at layer 2 and printing
// hidden_states, residual, stream on both ranks gives the statistics of the
// tensors an independent hook copies from a separate engine.
func TestBreakPrintMatchesReference(t *testing.T) {
	for _, tp := range []int{1, 2} {
		s := newSession(t, tp)
		if _, err := s.Break("layers.2", "", false); err != nil {
			t.Fatal(err)
		}
		st := expect(t, "model.layers.2")(s.Run())
		if st.Step != 0 || st.Tokens != 8 || st.SeqLens[0] != 5 || st.SeqLens[1] != 3 {
			t.Fatalf("stop %+v", st)
		}
		ref := reference(t, tp, "model.layers.2")
		for _, name := range []string{"hidden_states", "residual", "stream"} {
			rep, err := s.Print(name, client.All)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Ranks) != tp || rep.Gathered != nil {
				t.Fatalf("%s: %d rows, gathered %v", name, len(rep.Ranks), rep.Gathered)
			}
			for r, row := range rep.Ranks {
				m, sd, am := naive(ref[name][r].F32())
				if !near(row.Mean, m) || !near(row.Std, sd) || row.AbsMax != am || row.Count != 8*64 {
					t.Errorf("tp %d %s rank %d: %+v, want mean %v std %v absmax %v", tp, name, r, row.Stats, m, sd, am)
				}
				if r > 0 && (row.DiffRank0 == nil || *row.DiffRank0 != 0 || row.Diverged) {
					t.Errorf("tp %d %s rank %d: |Δ| vs rank 0 %v", tp, name, r, row.DiffRank0)
				}
			}
		}
		// --seq 1 --tokens 1:3: rows 6 and 7 of the batch.
		rep, err := s.Print("stream", client.Slice{Rank: tp - 1, Seq: 1, Tokens: &client.Range{Lo: 1, Hi: 3}})
		if err != nil {
			t.Fatal(err)
		}
		m, _, _ := naive(ref["stream"][tp-1].F32()[6*64 : 8*64])
		if len(rep.Ranks) != 1 || rep.Ranks[0].Rank != tp-1 || !near(rep.Ranks[0].Mean, m) || rep.Rows != (client.Range{Lo: 6, Hi: 8}) {
			t.Fatalf("slice: %+v", rep)
		}
		s.Kill()
	}
}

// TestShardedGatheredRow: at tp 2, q at qkv_proj is sharded over columns;
// the gathered row is the statistics of the concatenation, and values of
// the gathered tensor at [0, 30:34] straddle the two shards.
func TestShardedGatheredRow(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.1.self_attn.qkv_proj", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.1.self_attn.qkv_proj")(s.Run())
	ref := reference(t, 2, "model.layers.1.self_attn.qkv_proj")
	rep, err := s.Print("q", client.All)
	if err != nil {
		t.Fatal(err)
	}
	var full []float32
	for r := range 8 {
		full = append(full, ref["q"][0].F32()[r*32:(r+1)*32]...)
		full = append(full, ref["q"][1].F32()[r*32:(r+1)*32]...)
	}
	m, sd, _ := naive(full)
	g := rep.Gathered
	if g == nil || g.Label != "gathered" || g.Shape[1] != 64 || !near(g.Mean, m) || !near(g.Std, sd) {
		t.Fatalf("gathered %+v want mean %v std %v", g, m, sd)
	}
	if rep.Ranks[1].Shard != "sharded(dim=-1, 32:64 of 64)" {
		t.Fatalf("shard label %q", rep.Ranks[1].Shard)
	}
	idx, _ := client.ParseIndex("2, 30:34")
	vr, err := s.Values("q", idx, client.All)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{full[2*64+30], full[2*64+31], full[2*64+32], full[2*64+33]}
	for j, v := range vr.Gathered.Values[0] {
		if v != float64(want[j]) {
			t.Fatalf("gathered values %v want %v", vr.Gathered.Values, want)
		}
	}
	if vr.Ranks[1].Values[0][0] != float64(ref["q"][1].F32()[2*32+30]) {
		t.Fatalf("rank 1 local values %v", vr.Ranks[1].Values)
	}
	rr, err := s.Ranks("q", client.All)
	if err != nil || len(rr.Pairs) != 1 || rr.Pairs[0].Relation != "shard of" {
		t.Fatalf("ranks %+v %v", rr, err)
	}
	rr, err = s.Ranks("input", client.All)
	if err != nil || rr.Pairs[0].Relation != "equal" {
		t.Fatalf("ranks input %+v %v", rr, err)
	}
}

// TestPartialSum: o_proj's partial is a per-rank addend; the "sum" row
// equals the replicated output after the all-reduce.
func TestPartialSum(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.0.self_attn.o_proj", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.0.self_attn.o_proj")(s.Run())
	p, err := s.Print("partial", client.All)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := s.Print("output", client.All)
	if p.Gathered == nil || p.Gathered.Label != "sum" || !near(p.Gathered.Mean, o.Ranks[0].Mean) || !near(p.Gathered.AbsMax, o.Ranks[0].AbsMax) {
		t.Fatalf("sum %+v output %+v", p.Gathered, o.Ranks[0])
	}
	rr, _ := s.Ranks("partial", client.All)
	if rr.Pairs[0].Relation != "addends" {
		t.Fatalf("%+v", rr.Pairs)
	}
}

// TestSteppingFollowsTree: step visits the next site of the tree's visit
// order; next skips sub-modules; finish stops at the parent's site; until
// stops at the pattern; continue runs to the end.
func TestSteppingFollowsTree(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.1.post_attention_layernorm", "", false); err != nil {
		t.Fatal(err)
	}
	tr := s.E.Tree
	at := expect(t, "model.layers.1.post_attention_layernorm")(s.Run())
	idx := tr.Site(at.Site).Index
	st := expect(t, tr.Sites[idx+1].Path)(s.Step())
	if st.Site != "model.layers.1.mlp.gate_up_proj" || st.Reasons[0] != "step" {
		t.Fatalf("%+v", st)
	}
	expect(t, "model.layers.1.mlp")(s.Finish())
	expect(t, "model.layers.1")(s.Next())
	expect(t, "model.layers.2")(s.Next())
	expect(t, "model.norm")(s.Until("norm"))
	if _, err := s.Until("layers.9"); !errors.Is(err, client.ErrNoSite) {
		t.Fatalf("until layers.9: %v", err)
	}
	expect(t, "model")(s.Step())
	if _, err := s.Finish(); err == nil || !strings.Contains(err.Error(), "outermost") {
		t.Fatalf("finish at model: %v", err)
	}
	o, err := s.Continue()
	if err != nil || o.Done == nil || len(o.Done.Next) != 2 {
		t.Fatalf("continue: %+v %v", o, err)
	}
	if _, err := s.Step(); !errors.Is(err, client.ErrNotStopped) {
		t.Fatalf("step after the end: %v", err)
	}
}

// TestBacktraceMatchesTree: the call chain at a stop is the site and its
// ancestors from the tree, innermost first (level 0 the site, as gdb
// numbers frames), then the root class.
func TestBacktraceMatchesTree(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.3.mlp.down_proj", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.3.mlp.down_proj")(s.Run())
	bt, err := s.Backtrace()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for st := s.E.Tree.Site("model.layers.3.mlp.down_proj"); st != nil; st = st.Parent {
		want = append(want, st.Path+":"+st.Class)
	}
	want = append(want, ":"+s.E.Tree.Root.Class)
	var got []string
	for i, f := range bt {
		if f.Level != i {
			t.Errorf("frame %d (%s) has level %d", i, f.Site, f.Level)
		}
		got = append(got, f.Site+":"+f.Class)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("bt %v\nwant %v", got, want)
	}
	// down_proj's input on each rank is its shard of the MLP activations:
	// [8 tokens, 172/2 = 86].
	site := bt[0]
	if len(site.Inputs) != 2 || site.Inputs[1][0][1] != 86 || site.Outputs[0][0].Name != "input" {
		t.Fatalf("frame #0 %+v", site)
	}
}

// TestConditionalBreakAndWatch: a condition true only on rank 1 stops
// there and says so; an impossible one never stops; a watch fires once
// where its condition becomes true and not again while it stays true.
func TestConditionalBreakAndWatch(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.*", "rank == 1 && absmax(stream) > 0", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.*.mlp", "nan", false); err != nil {
		t.Fatal(err)
	}
	st := expect(t, "model.layers.0")(s.Run())
	if !strings.Contains(st.Reasons[0], "true on rank 1") {
		t.Fatalf("%v", st.Reasons)
	}
	s.Kill()
	s.Delete()
	// Layer outputs' stream absmax from an independent run; a threshold
	// between the first and the largest makes the watch fire at the first
	// layer reaching it.
	ref := map[int]float64{}
	for l := range 5 {
		r := reference(t, 1, "model.layers."+string(rune('0'+l)))
		_, _, ref[l] = naive(r["stream"][0].F32())
	}
	thr := (ref[0] + ref[4]) / 2
	first := -1
	for l := range 5 {
		if ref[l] > thr {
			first = l
			break
		}
	}
	if _, err := s.Watch("stream", "absmax > "+trimFloat(thr)); err != nil {
		t.Fatal(err)
	}
	st = expect(t, "model.layers."+string(rune('0'+first)))(s.Run())
	if !strings.HasPrefix(st.Reasons[0], "watch 3: stream absmax > ") {
		t.Fatalf("%v", st.Reasons)
	}
	// It stays true or not afterwards; it must not fire again on a layer
	// whose predecessor was already above the threshold.
	for {
		o, err := s.Continue()
		if err != nil {
			t.Fatal(err)
		}
		if o.Done != nil {
			break
		}
		l := o.Stop.Layer
		if ref[l-1] > thr {
			t.Fatalf("watch fired again at layer %d though layer %d was already above", l, l-1)
		}
	}
}

func trimFloat(f float64) string { return strings.TrimRight(strings.TrimRight(fmtG(f), "0"), ".") }

// TestRunWhileStoppedRestarts: `run` while stopped aborts the old pass and
// starts again; temporary breakpoints vanish after one hit.
func TestRunWhileStoppedRestarts(t *testing.T) {
	s := newSession(t, 2)
	if _, err := s.Break("layers.1", "", true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.3", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.1")(s.Run())
	expect(t, "model.layers.3")(s.Run())
	expect(t, "model.layers.3")(s.Run())
	if bps := s.Breakpoints(); len(bps) != 1 || bps[0].ID != 2 || bps[0].Hits != 2 {
		t.Fatalf("%+v", bps)
	}
}

// TestGenStopsInDecodeSteps: gen 3 after a run stops at the breakpoint in
// each decode step (steps 1..3) with one token per sequence, and the tokens
// fed are the greedy continuation the engine's own Generate produces.
func TestGenStopsInDecodeSteps(t *testing.T) {
	s := newSession(t, 1)
	o, err := s.Run()
	if err != nil || o.Done == nil {
		t.Fatalf("%+v %v", o, err)
	}
	if _, err := s.Break("lm_head", "", false); err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
		var o *client.Outcome
		if k == 1 {
			o, err = s.Gen(3)
		} else {
			o, err = s.Continue()
		}
		st := mustStop(t, o, err, "lm_head")
		if st.Step != k || st.Tokens != 2 {
			t.Fatalf("step %d: %+v", k, st)
		}
	}
	o, err = s.Continue()
	if err != nil || o.Done == nil || o.Done.DecodeSteps != 3 {
		t.Fatalf("%+v %v", o, err)
	}
	e2, _ := engine.LoadLlama2C(storiesBin, engine.Options{})
	want, err := e2.Generate(twoSeqs[1], engine.GenerateOptions{Steps: len(twoSeqs[1]) + 3})
	if err != nil {
		t.Fatal(err)
	}
	got := append(o.Done.Generated[1], o.Done.Next[1])
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("generated %v, engine's greedy %v", got, want)
		}
	}
}

// TestInterruptStopsAtNextSite: Interrupt from another goroutine stops a
// running pass at a site with every rank there; the session goes on.
func TestInterruptStopsAtNextSite(t *testing.T) {
	s := newSession(t, 2)
	o, err := s.Run()
	if err != nil || o.Done == nil {
		t.Fatal(err)
	}
	// Interrupt as soon as tracing shows the pass running.
	s.SetTrace(true)
	n := 0
	s.OnTrace = func(client.TraceLine) {
		n++
		if n == 5 {
			s.Interrupt()
		}
	}
	o, err = s.Gen(2)
	if err != nil || o.Stop == nil || o.Stop.Reasons[0] != "interrupted" {
		t.Fatalf("%+v %v", o, err)
	}
	s.SetTrace(false)
	if o, err := s.Continue(); err != nil || o.Done == nil {
		t.Fatalf("continue after interrupt: %+v %v", o, err)
	}
	if s.Interrupt() {
		t.Fatal("Interrupt with nothing running reported a pass")
	}
}

func TestErrors(t *testing.T) {
	s := newSession(t, 2)
	cases := []struct {
		err  error
		want string
	}{
		{second(s.Break("layers.7", "", false)), `no such site: "layers.7" matches no site of this model (layers 0-4`},
		{second(s.Break("layers.1", "absmax(residual >", false)), `condition "absmax(residual >": column 17: expected ')' after absmax(residual, found ">"`},
		{second(s.Break("layers.1", "absmax(q) > 1", false)), `condition reads "q", which layers.1 does not show`},
		{second(s.Watch("nosuch", "absmax > 1")), `no site shows a tensor named "nosuch"`},
		{second(s.Print("hidden_states", client.All)), "not stopped"},
		{s.SetBatch([][]int32{{1, 999}}), "token id 999 (sequence 0, token 1) is outside the vocabulary [0, 512)"},
		{s.Delete(42), "no breakpoint number 42"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v\nwant %q", c.err, c.want)
		}
	}
	if _, err := s.Break("layers.0", "", false); err != nil {
		t.Fatal(err)
	}
	expect(t, "model.layers.0")(s.Run())
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(s.Print("q", client.All)), `model.layers.0 shows hidden_states, residual, stream, not "q"`},
		{second(s.Print("stream", client.Slice{Rank: 2, Seq: -1})), "rank 2: the world has 2 ranks, 0-1"},
		{second(s.Print("stream", client.Slice{Rank: -1, Seq: 5})), "--seq 5: step 0's batch has 2 sequences (0-1)"},
		{second(s.Print("stream", client.Slice{Rank: -1, Seq: 1, Tokens: &client.Range{Lo: 2, Hi: 9}})), "--tokens 2:9: sequence 1 has 3 tokens"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("got %v\nwant %q", c.err, c.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }
