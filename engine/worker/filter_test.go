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
