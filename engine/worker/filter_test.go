package worker

import (
	"testing"

	"hsdb/engine"
	"hsdb/engine/enginetest"
	"hsdb/engine/model"
)

// oneSite is a hook that wants one site, says so (model.SiteFilter), and
// counts its visits.
type oneSite struct {
	path   string
	visits int
}

func (o *oneSite) Want(ev *model.Event) bool { return ev.Site.Path == o.path }
func (o *oneSite) Visit(ev *model.Event, views []*model.RankView) error {
	o.visits++
	return nil
}
func (o *oneSite) WantSites(_ int, sites []*model.Site) []bool {
	w := make([]bool, len(sites))
	for i, s := range sites {
		w[i] = s.Path == o.path
	}
	return w
}
func (o *oneSite) Passed(*model.Event) {}

// TestUnwatchedSitesCostNoMessage: with a hook that watches one site, a
// prefill and a decode step through --tp 2 workers cost exactly one want
// message per rank per step (the watched site); a worker that still asked
// at an unwatched site would add one per site. Asking at every site (the
// protocol without filters) costs ranks × sites per step, which is the
// count this one is compared with. The logits equal the in-process ones.
func TestUnwatchedSitesCostNoMessage(t *testing.T) {
	seqs := [][]int32{{1, 403, 407, 261}, {1, 400}}
	for _, askAll := range []bool{false, true} {
		e, f := openWorkers(t, "", engine.Options{TP: 2}, Config{askAll: askAll})
		h := &oneSite{path: "model.layers.2.mlp"}
		before := f.Asked()
		out, err := e.Prefill(seqs, h, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Decode([]int32{5, 6}, h); err != nil {
			t.Fatal(err)
		}
		got := f.Asked() - before
		want := int64(2 * 2) // 2 ranks × 2 steps, at the one watched site
		if askAll {
			want = int64(2 * 2 * len(e.Tree.Sites))
		}
		if got != want || h.visits != 2 {
			t.Errorf("askAll %v: %d want messages and %d visits; want %d and 2 (%d sites)", askAll, got, h.visits, want, len(e.Tree.Sites))
		}
		if !askAll {
			local, err := engine.Open("", engine.Options{TP: 2})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := local.Prefill(seqs, nil, false)
			local.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := enginetest.CheckClose(out.Values.F32(), ref.Values.F32(), 0); err != nil {
				t.Errorf("logits through filtered workers vs in process: %v", err)
			}
		}
	}
}

// TestStagesLoadOnlyWhatTheyRun: with --pp 2 --tp 2 the stages hold their
// model's ends as vLLM places them: the embedding on stage 0, the final
// norm and LM head on stage 1 — with tied embeddings (the HF llama fixture)
// the head is the embedding's weight, so stage 1 holds that too. Both
// fixtures have vocab_size 101 (padded to 128 for 2 ranks), hidden 96 and
// f32 weights, so by hand the embedding and an untied head are each 2
// ranks × [64, 96] × 4 = 49,152 bytes and the final norm 2 × 96 × 4 = 768.
// Each stage must hold exactly that much less than an in-process load of
// its layers (--load-layers, which holds every end), and the stages
// together what one --tp 2 load holds (plus the embedding once more when
// tied).
func TestStagesLoadOnlyWhatTheyRun(t *testing.T) {
	const embed, head, norm = 2 * 64 * 96 * 4, 2 * 64 * 96 * 4, 2 * 96 * 4
	for _, c := range []struct {
		name string
		tied bool
	}{{"llama", true}, {"qwen3", false}} {
		t.Run(c.name, func(t *testing.T) {
			dir := "../../testdata/hf/" + c.name
			_, f := joinWorkers(t, dir, engine.Options{TP: 2}, 2)
			var stage [2]int64
			for s := range 2 {
				for r := range 2 {
					stage[s] += f.slot(s*2 + r).report.Bytes
				}
			}
			held := func(o engine.Options) int64 {
				e, err := engine.Open(dir, o)
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				return e.Report.Bytes
			}
			less := [2]int64{head + norm, embed} // what each stage leaves to the other
			extra := int64(0)
			if c.tied {
				less = [2]int64{norm, 0} // no head weight of its own; the last stage keeps the embedding for it
				extra = embed
			}
			for s, lr := range f.stages {
				layers := held(engine.Options{TP: 2, Layers: &lr})
				if stage[s] != layers-less[s] {
					t.Errorf("stage %d (layers %s) holds %d bytes; want %d (its layers with every end: %d)", s, lr, stage[s], layers-less[s], layers)
				}
			}
			if all := held(engine.Options{TP: 2}); stage[0]+stage[1] != all+extra {
				t.Errorf("the stages hold %d + %d bytes; want %d (one --tp 2 load: %d)", stage[0], stage[1], all+extra, all)
			}
		})
	}
}
