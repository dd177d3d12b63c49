package debug

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
	"hsdb/inspect/client"
)

// logitsRec records the gathered lm_head logits of every prefill (an
// observer beside the debugger), the reference the edits are checked on.
type logitsRec struct{ got []*tensor.Tensor }

func (l *logitsRec) Want(ev *model.Event) bool { return ev.Site.Path == "lm_head" && ev.Step == 0 }
func (l *logitsRec) Visit(ev *model.Event, ranks []*model.RankView) error {
	g, err := capture.GatherSite("lm_head", "logits", ranks)
	if err != nil {
		return err
	}
	l.got = append(l.got, tensor.FromF32(g.T.ToF32(), g.T.Shape...))
	return nil
}

func lastLayer(s *Session) string { return fmt.Sprintf("model.layers.%d", s.E.Dims.Layers-1) }

// stopped returns a checker of a run command's result: any stop.
func stopped(t *testing.T) func(*client.Outcome, error) *client.Stop {
	return func(o *client.Outcome, err error) *client.Stop {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if o == nil || o.Stop == nil {
			t.Fatalf("want a stop, got %+v", o)
		}
		return o.Stop
	}
}

// done returns a checker of a run command's result: the end of the pass.
func done(t *testing.T) func(*client.Outcome, error) *client.Done {
	return func(o *client.Outcome, err error) *client.Done { t.Helper(); return mustDone(t, o, err) }
}

func mustDone(t *testing.T, o *client.Outcome, err error) *client.Done {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if o == nil || o.Done == nil {
		t.Fatalf("want the pass to end, got %+v", o)
	}
	return o.Done
}

// stopAtLastLayer starts a session at tp ranks whose logits rec records
// and runs it to a stop at the last decoder layer.
func stopAtLastLayer(t *testing.T, dev string, tp int) (*Session, *logitsRec) {
	t.Helper()
	s := newSessionOn(t, dev, tp)
	rec := &logitsRec{}
	s.Observers = append(s.Observers, rec)
	if _, err := s.Break(lastLayer(s), "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	return s, rec
}

// Zeroing the last layer's stream: the final RMSNorm of a zero row is zero
// (0 / sqrt(0 + eps) · w) and lm_head of zero is zero, so every logit of
// every row is exactly 0 and greedy decoding takes the lowest id, 0.
func TestSetVarZeroLastStream(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s, rec := stopAtLastLayer(t, dev, tp)
				e, err := s.SetVar(client.EditRequest{Tensor: "stream", Slice: client.All, Op: "=", Value: 0})
				if err != nil {
					t.Fatal(err)
				}
				if e.Rows != (client.Range{Lo: 0, Hi: 8}) || e.Cols.Hi != s.E.Dims.Hidden {
					t.Errorf("edit covers rows %v cols %v, want all 8 rows and %d columns", e.Rows, e.Cols, s.E.Dims.Hidden)
				}
				st := s.Stopped()
				if len(st.Edits) != 1 {
					t.Errorf("stop lists edits %q, want the one edit", st.Edits)
				}
				d := done(t)(s.Continue())
				if len(rec.got) != 1 {
					t.Fatalf("%d logits recorded", len(rec.got))
				}
				l := rec.got[0].F32()
				if len(l) != 2*s.E.Dims.Vocab {
					t.Fatalf("logits %v, want [2, %d]", rec.got[0].Shape, s.E.Dims.Vocab)
				}
				for i, v := range l {
					if v != 0 {
						t.Fatalf("logit %d is %g, want exactly 0 (every logit)", i, v)
					}
				}
				if len(d.Notes) != 1 || !strings.HasPrefix(d.Notes[0], "edit 1: model.layers.") {
					t.Errorf("end of the edited pass notes %q, want the edit", d.Notes)
				}
				if d.Next[0] != 0 || d.Next[1] != 0 {
					t.Errorf("next tokens %v, want [0 0]: the lowest id among equal logits", d.Next)
				}
				if es := s.Edits(); len(es) != 1 || es[0].Applied != 1 {
					t.Errorf("info edits: %+v", es)
				}
				// run resets edits that do not persist: the logits are the model's again.
				if err := s.Delete(); err != nil {
					t.Fatal(err)
				}
				done(t)(s.Run())
				if len(s.Edits()) != 0 {
					t.Errorf("edits after run: %+v", s.Edits())
				}
				nonzero := 0
				for _, v := range rec.got[1].F32() {
					if v != 0 {
						nonzero++
					}
				}
				if nonzero == 0 {
					t.Errorf("the run after the edit still has all-zero logits")
				}
			})
		}
	})
}

// Halving rank 1's copy of a replicated tensor makes rank 1 differ from
// every other rank and leaves the others equal (derived by hand).
func TestSetVarOneRankDiverges(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s := newSessionOn(t, dev, tp)
				if _, err := s.Break("layers.2", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				if _, err := s.SetVar(client.EditRequest{Tensor: "stream", Slice: client.Slice{Rank: 1, Seq: -1}, Op: "*", Value: 0.5}); err != nil {
					t.Fatal(err)
				}
				for _, name := range []string{"stream", "hidden_states"} {
					rep, err := s.Ranks(name, client.All)
					if err != nil {
						t.Fatal(err)
					}
					if len(rep.Pairs) != tp*(tp-1)/2 {
						t.Fatalf("%s: %d pairs", name, len(rep.Pairs))
					}
					for _, p := range rep.Pairs {
						want := "equal"
						if p.A == 1 || p.B == 1 {
							want = "diverged"
						}
						if p.Relation != want {
							t.Errorf("%s ranks %d-%d: %s, want %s", name, p.A, p.B, p.Relation, want)
						}
					}
				}
			})
		}
	})
}

// Bad input leaves the pass untouched: an edit of a consumed tensor, a head
// out of range, a bad value each give one error and the stop's tensors
// keep their values.
func TestEditErrorsLeavePass(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		s := newSessionOn(t, dev, 2)
		if _, err := s.Break("layers.1.mlp", "", false); err != nil {
			t.Fatal(err)
		}
		stopped(t)(s.Run())
		before, err := s.Print("output", client.All)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetVar(client.EditRequest{Tensor: "input", Slice: client.All, Op: "=", Value: 0}); !errors.Is(err, client.ErrConsumed) {
			t.Errorf("edit of mlp input: %v, want ErrConsumed", err)
		}
		if _, err := s.SetVar(client.EditRequest{Tensor: "output", Slice: client.All, Op: "/", Value: 0}); err == nil {
			t.Errorf("division by 0 accepted")
		}
		if _, err := s.SetVar(client.EditRequest{Tensor: "output", Slice: client.Slice{Rank: 5, Seq: -1}, Op: "=", Value: 0}); !errors.Is(err, client.ErrRank) {
			t.Errorf("rank 5: %v, want ErrRank", err)
		}
		if _, err := s.AttnProbs(0, 0); err == nil {
			t.Errorf("attn_probs at an MLP accepted")
		}
		after, err := s.Print("output", client.All)
		if err != nil {
			t.Fatal(err)
		}
		for r := range before.Ranks {
			if before.Ranks[r].Stats != after.Ranks[r].Stats {
				t.Errorf("rank %d: output changed by failed edits: %+v vs %+v", r, before.Ranks[r].Stats, after.Ranks[r].Stats)
			}
		}
		if len(s.Edits()) != 0 {
			t.Errorf("failed edits listed: %+v", s.Edits())
		}
		s.Kill()
		if _, err := s.Break("layers.1.self_attn.attn", "", false); err != nil {
			t.Fatal(err)
		}
		stopped(t)(s.Run())
		if _, err := s.AttnProbs(8, 0); !errors.Is(err, client.ErrHead) {
			t.Errorf("head 8 of 8: %v, want ErrHead", err)
		}
		if _, err := s.AttnProbs(0, -1); err == nil {
			t.Errorf("no --seq with two sequences accepted")
		}
	})
}

// The logit lens at the last layer is the model's own final logits: the
// same top K ids in order (ties by lower id), logits within 1e-5 and
// softmax probabilities computed here from the recorded row.
func TestLensLastLayerIsFinalTopK(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		const k = 7
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s, rec := stopAtLastLayer(t, dev, tp)
				rep, err := s.Lens(k)
				if err != nil {
					t.Fatal(err)
				}
				done(t)(s.Continue())
				V := s.E.Dims.Vocab
				l := rec.got[0].F32()
				if len(rep.Seqs) != 2 {
					t.Fatalf("lens rows %d", len(rep.Seqs))
				}
				for i, sq := range rep.Seqs {
					row := l[i*V : (i+1)*V]
					idx := make([]int, V)
					for j := range idx {
						idx[j] = j
					}
					sort.SliceStable(idx, func(a, b int) bool { return row[idx[a]] > row[idx[b]] })
					mx, z := float64(row[idx[0]]), 0.0
					for _, v := range row {
						z += math.Exp(float64(v) - mx)
					}
					if len(sq.Top) != k {
						t.Fatalf("seq %d: %d tokens", i, len(sq.Top))
					}
					for j, tk := range sq.Top {
						want := row[idx[j]]
						if int(tk.ID) != idx[j] || !(math.Abs(tk.Logit-float64(want)) <= 1e-5) {
							t.Errorf("seq %d #%d: lens %d (%g), final logits %d (%g)", i, j, tk.ID, tk.Logit, idx[j], want)
						}
						p := math.Exp(float64(want)-mx) / z
						if !(math.Abs(tk.Prob-p) <= 1e-6) {
							t.Errorf("seq %d #%d: prob %g, want %g", i, j, tk.Prob, p)
						}
					}
				}
			})
		}
	})
}

// Activation patching: layer i's stream of run A (a dump) patched into run
// B (other ids, same lengths) makes every later layer and the logits equal
// run A's exactly: from layer i+1 on, B computes on A's values.
func TestPatchReproducesRunA(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		const layer = 2
		runA := [][]int32{{1, 403, 407, 261, 378}, {1, 400, 281}}
		runB := [][]int32{{1, 300, 301, 302, 303}, {1, 350, 351}}
		for _, tp := range []int{1, 2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s := newSessionOn(t, dev, tp)
				rec := &logitsRec{}
				s.Observers = append(s.Observers, rec)
				l := NewLocal(s)
				if err := l.CaptureLayers([]int{layer, layer + 1, s.E.Dims.Layers - 1}, "stream"); err != nil {
					t.Fatal(err)
				}
				if err := s.SetBatch(runA); err != nil {
					t.Fatal(err)
				}
				done(t)(s.Run())
				seqsA, _, err := l.capturer().Result()
				if err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir() + "/a"
				if _, err := l.Dump(dir, client.DumpRequest{}); err != nil {
					t.Fatal(err)
				}
				keyLast := fmt.Sprintf("hidden_states.%d", s.E.Dims.Layers-1)

				// A mismatch first: run B with other lengths cannot take A's rows.
				if err := s.SetBatch([][]int32{{1, 2, 3}, {1, 400, 281}}); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Break(fmt.Sprintf("layers.%d", layer), "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				before, _ := s.Print("stream", client.All)
				if _, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1}); !errors.Is(err, client.ErrMismatch) {
					t.Fatalf("patch of 3 tokens from 5: %v, want ErrMismatch", err)
				}
				after, _ := s.Print("stream", client.All)
				if before.Ranks[0].Stats != after.Ranks[0].Stats {
					t.Errorf("failed patch changed the stream")
				}

				if err := s.SetBatch(runB); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				e, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1})
				if err != nil {
					t.Fatal(err)
				}
				if e.Rows.Hi != 8 {
					t.Errorf("patch rows %v", e.Rows)
				}
				done(t)(s.Continue())
				seqsB, _, err := l.capturer().Result()
				if err != nil {
					t.Fatal(err)
				}
				for i, sq := range seqsB {
					for _, key := range []string{fmt.Sprintf("hidden_states.%d", layer+1), keyLast} {
						a, b := seqsA[i].Tensors[key].ToF32(), sq.Tensors[key].ToF32()
						if len(a) != len(b) || len(a) == 0 {
							t.Fatalf("seq %d %s: %d vs %d values", i, key, len(a), len(b))
						}
						for j := range a {
							if a[j] != b[j] {
								t.Fatalf("seq %d %s[%d]: run A %g, patched run B %g: want equal", i, key, j, a[j], b[j])
							}
						}
					}
				}
				if len(rec.got) < 2 {
					t.Fatalf("logits recorded %d times", len(rec.got))
				}
				la, lb := rec.got[0].F32(), rec.got[len(rec.got)-1].F32()
				for j := range la {
					if la[j] != lb[j] {
						t.Fatalf("logit %d: run A %g, patched run B %g", j, la[j], lb[j])
					}
				}
				// The dump of the patched run says it was edited.
				dirB := t.TempDir() + "/b"
				m, err := l.Dump(dirB, client.DumpRequest{})
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Edits) != 1 {
					t.Errorf("manifest edits %q, want the patch", m.Edits)
				}
			})
		}
	})
}

// A sharded tensor's columns are the full tensor's: zeroing q's columns
// 0:4 and 60:64 of 64 (stories260K: 8 heads of 8) writes rank 0's first
// and the last rank's last columns only; a partial sum refuses `=` on
// every rank.
func TestSetVarShardedColumns(t *testing.T) {
	forEachDevice(t, func(t *testing.T, dev string) {
		for _, tp := range []int{2, 4} {
			t.Run(fmt.Sprint("tp", tp), func(t *testing.T) {
				s := newSessionOn(t, dev, tp)
				if _, err := s.Break("layers.0.self_attn.qkv_proj", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				all := client.Index{Rows: client.IndexSpec{}, Cols: client.IndexSpec{}}
				before, err := s.Values("q", all, client.All)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []client.IndexSpec{{Lo: 0, Hi: 4, HasLo: true, HasHi: true}, {Lo: 60, Hi: 64, HasLo: true, HasHi: true}} {
					if _, err := s.SetVar(client.EditRequest{Tensor: "q", HasIndex: true, Index: client.Index{Cols: c}, Slice: client.All, Op: "=", Value: 0}); err != nil {
						t.Fatal(err)
					}
				}
				after, err := s.Values("q", all, client.All)
				if err != nil {
					t.Fatal(err)
				}
				w := 64 / tp
				for r := range tp {
					for i, row := range after.Ranks[r].Values {
						for j, x := range row {
							full := r*w + j
							want := before.Ranks[r].Values[i][j]
							if full < 4 || full >= 60 {
								want = 0
							}
							if x != want {
								t.Fatalf("rank %d q[%d, %d] (full column %d) = %g, want %g", r, i, j, full, x, want)
							}
						}
					}
				}
				s.Kill()
				s.Delete()
				if _, err := s.Break("layers.0.self_attn.o_proj", "", false); err != nil {
					t.Fatal(err)
				}
				stopped(t)(s.Run())
				if _, err := s.SetVar(client.EditRequest{Tensor: "partial", Slice: client.All, Op: "=", Value: 0}); !errors.Is(err, client.ErrConsumed) {
					t.Errorf("edit of o_proj's all-reduced partial sum: %v, want ErrConsumed", err)
				}
			})
		}
	})
}
