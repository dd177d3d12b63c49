package engine

import (
	"errors"
	"fmt"
	"hsdb/engine/enginetest"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

const storiesBin = "../testdata/stories260K/stories260K.bin"

// loadStories loads stories260K on the CPU (see loadStoriesOn).
func loadStories(t testing.TB, tp int) *Engine {
	t.Helper()
	return loadStoriesOn(t, "cpu", tp)
}

var prompts = [][]int32{{1, 403, 407, 261, 378, 365, 271}, {1, 64}, {1, 400, 281, 350, 305, 258, 333, 294, 300, 406, 270, 290}}

// TestTPEqualsTP1: the same batch at --tp 2 and 4 gives every layer's stream
// and the logits of --tp 1 within float32 rounding, and replicated tensors
// are equal on every rank.
func TestTPEqualsTP1(t *testing.T) { forEachDevice(t, testTPEqualsTP1) }

func testTPEqualsTP1(t *testing.T, dev string) {
	tol := relTol(dev)
	ref := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
	e1 := loadStoriesOn(t, dev, 1)
	l1, err := e1.Prefill(prompts, ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Got) != e1.Dims.Layers {
		t.Fatalf("--tp 1: %d layer outputs recorded, want %d", len(ref.Got), e1.Dims.Layers)
	}
	for _, tp := range []int{2, 4} {
		rec := &enginetest.Recorder{Sites: enginetest.LayerOutputs, Names: []string{"stream"}}
		ln, err := loadStoriesOn(t, dev, tp).Prefill(prompts, rec, true)
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range ref.Got {
			got := rec.Got[k]
			if len(got) != tp {
				t.Fatalf("tp %d: %s seen on %d ranks", tp, k, len(got))
			}
			for r, g := range got {
				if err := enginetest.CheckClose(g.F32(), want[0].F32(), tol); err != nil {
					t.Errorf("tp %d rank %d %s: rel diff %v", tp, r, k, err)
				}
			}
		}
		if err := enginetest.CheckClose(ln.Values.F32(), l1.Values.F32(), tol); err != nil {
			t.Errorf("tp %d logits rel diff %v", tp, err)
		}
	}
}

// TestSitesVisitedInTreeOrder: a step visits every site of the tree exactly
// once, in the tree's post-order.
func TestSitesVisitedInTreeOrder(t *testing.T) { forEachDevice(t, testSitesVisitedInTreeOrder) }

func testSitesVisitedInTreeOrder(t *testing.T, dev string) {
	e := loadStoriesOn(t, dev, 2)
	rec := &enginetest.Recorder{Sites: func(*model.Site) bool { return true }, Names: []string{"-"}}
	if _, err := e.Prefill(prompts[:1], rec, false); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range e.Tree.Sites {
		want = append(want, s.Path)
	}
	if strings.Join(rec.Visits, " ") != strings.Join(want, " ") {
		t.Fatalf("visited\n%v\nwant\n%v", rec.Visits, want)
	}
	// model + embed_tokens + 5 layers × 12 (layer, 2 norms, self_attn with
	// qkv/rotary/attn/o_proj, mlp with gate_up/act/down) + norm + lm_head.
	if len(want) != 1+1+5*12+1+1 {
		t.Errorf("%d sites", len(want))
	}
}

// TestBatchIsolation: sequences run together give the same logits as run
// alone (attention never crosses sequences).
func TestBatchIsolation(t *testing.T) { forEachDevice(t, testBatchIsolation) }

func testBatchIsolation(t *testing.T, dev string) {
	e := loadStoriesOn(t, dev, 1)
	all, err := e.Prefill(prompts, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range prompts {
		one, err := e.Prefill([][]int32{p}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(all.Row(s), one.Row(0), relTol(dev)); err != nil {
			t.Errorf("sequence %d: batched vs alone rel diff %v", s, err)
		}
	}
}

// TestDecodeMatchesPrefill: prefilling a prefix then decoding token by token
// gives the logits that one prefill of the whole sequence gives per position.
func TestDecodeMatchesPrefill(t *testing.T) { forEachDevice(t, testDecodeMatchesPrefill) }

func testDecodeMatchesPrefill(t *testing.T, dev string) {
	e := loadStoriesOn(t, dev, 2)
	full := prompts[2]
	ref, err := e.Prefill([][]int32{full}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	// Two sequences decoded together: the long one from a 4-token prefix and
	// a short one alongside, so the decode batch mixes positions.
	if _, err := e.Prefill([][]int32{full[:4], prompts[1]}, nil, false); err != nil {
		t.Fatal(err)
	}
	for p := 4; p < len(full); p++ {
		l, err := e.Decode([]int32{full[p], 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := enginetest.CheckClose(l.Row(0), ref.Row(p), relTol(dev)); err != nil {
			t.Errorf("position %d: decode vs prefill rel diff %v", p, err)
		}
	}
}

// TestTokenOutOfRange names the sequence and token.
func TestTokenOutOfRange(t *testing.T) { forEachDevice(t, testTokenOutOfRange) }

func testTokenOutOfRange(t *testing.T, dev string) {
	e := loadStoriesOn(t, dev, 1)
	_, err := e.Prefill([][]int32{{1, 2}, {1, 600, 3}}, nil, false)
	if err == nil || !strings.Contains(err.Error(), "token id 600 (sequence 1, token 1)") || !strings.Contains(err.Error(), "[0, 512)") {
		t.Fatalf("err = %v", err)
	}
}

// stopper fails the pass at a chosen site.
type stopper struct{ at string }

func (s *stopper) Want(ev *model.Event) bool { return ev.Site.Path == s.at }
func (s *stopper) Visit(ev *model.Event, ranks []*model.RankView) error {
	return fmt.Errorf("stopped by user at %s on %d ranks", ev.Site.Path, len(ranks))
}

// TestHookErrorStopsAllRanks: a Visit error ends the pass on every rank and
// comes back unchanged; the step's activations are freed (each rank holds
// what a completed step leaves: weights and KV caches); the engine runs
// again afterwards.
func TestHookErrorStopsAllRanks(t *testing.T) { forEachDevice(t, testHookErrorStopsAllRanks) }

func testHookErrorStopsAllRanks(t *testing.T, dev string) {
	e := loadStoriesOn(t, dev, 4)
	if _, err := e.Prefill(prompts, nil, false); err != nil {
		t.Fatal(err)
	}
	held := e.MemoryInUse()
	_, err := e.Prefill(prompts, &stopper{at: "model.layers.2.mlp.down_proj"}, false)
	if err == nil || err.Error() != "stopped by user at model.layers.2.mlp.down_proj on 4 ranks" {
		t.Fatalf("err = %v", err)
	}
	if got := e.MemoryInUse(); fmt.Sprint(got) != fmt.Sprint(held) {
		t.Errorf("bytes in use per rank after a stop %v, after a full step %v", got, held)
	}
	if _, err := e.Prefill(prompts, nil, false); err != nil {
		t.Fatalf("after a stop: %v", err)
	}
}

// TestConfigSplitErrors: a world size that does not divide the heads is
// refused with the numbers.
func TestConfigSplitErrors(t *testing.T) { forEachDevice(t, testConfigSplitErrors) }

func testConfigSplitErrors(t *testing.T, dev string) {
	_, err := LoadLlama2C(storiesBin, Options{TP: 3, Device: dev})
	if err == nil || !strings.Contains(err.Error(), "num_attention_heads 8 is not divisible by --tp 3") {
		t.Fatalf("err = %v", err)
	}
	_, err = LoadLlama2C(storiesBin, Options{TP: 1, Device: "tpu"})
	if !errors.Is(err, ErrDevice) {
		t.Fatalf("err = %v", err)
	}
}

// TestMemoryInUseIsShardBytes: each rank holds exactly its shard of every
// weight (the tree's per-rank shapes × 4 bytes, f32), and the KV cache is
// counted once it exists.
func TestMemoryInUseIsShardBytes(t *testing.T) {
	e := loadStories(t, 2)
	for r, got := range e.MemoryInUse() {
		var want int64
		for _, p := range e.Tree.Params() {
			want += int64(tensor.Numel(p.RankShape(r))) * 4
		}
		if got != want {
			t.Errorf("rank %d holds %d bytes, its shards are %d", r, got, want)
		}
	}
	before := e.MemoryInUse()[0]
	if _, err := e.Prefill(prompts, nil, false); err != nil {
		t.Fatal(err)
	}
	kv := e.CacheBytes()[0]
	if kv == 0 || e.MemoryInUse()[0] != before+kv {
		t.Errorf("after a prefill: in use %d, weights %d + cache %d", e.MemoryInUse()[0], before, kv)
	}
}
