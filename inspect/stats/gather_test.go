package stats

import (
	"errors"
	"testing"

	"hsdb/engine/model"
	"hsdb/engine/tensor"
)

func sh(s, e, full int) model.Sharding {
	return model.Sharding{Kind: model.Sharded, Start: s, End: e, Full: full}
}

// TestGatherSharded: two ranks with columns 0:2 and 2:4 of a [2, 4] tensor
// give back the row-major full tensor.
func TestGatherSharded(t *testing.T) {
	g, err := Gather([]Part{
		{Rank: 0, Shard: sh(0, 2, 4), Data: tensor.FromF32([]float32{1, 2, 5, 6}, 2, 2)},
		{Rank: 1, Shard: sh(2, 4, 4), Data: tensor.FromF32([]float32{3, 4, 7, 8}, 2, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	if len(g.F32()) != len(want) {
		t.Fatalf("gathered %v, want %v", g.F32(), want)
	}
	for i, v := range g.F32() {
		if v != want[i] {
			t.Fatalf("%v", g.F32())
		}
	}
}

// TestGatherReplicatedKVHeads: four ranks, two kv-head ranges each held by
// two ranks (kv heads replicated): agreeing copies gather, a disagreeing
// copy is named.
func TestGatherReplicatedKVHeads(t *testing.T) {
	a := tensor.FromF32([]float32{1, 2}, 1, 2)
	b := tensor.FromF32([]float32{3, 4}, 1, 2)
	parts := []Part{{0, sh(0, 2, 4), a}, {1, sh(0, 2, 4), a}, {2, sh(2, 4, 4), b}, {3, sh(2, 4, 4), b}}
	g, err := Gather(parts)
	if err != nil || g.Cols() != 4 || g.F32()[3] != 4 {
		t.Fatalf("%v %v", g, err)
	}
	parts[3].Data = tensor.FromF32([]float32{3, 9}, 1, 2)
	_, err = Gather(parts)
	if !errors.Is(err, ErrShardMismatch) || err.Error() != "shards do not fit together: ranks 2 and 3 both hold columns 2:4 but differ at [0, 3]: 4 vs 9" {
		t.Fatalf("%v", err)
	}
}

func TestGatherPartialSums(t *testing.T) {
	p := model.Sharding{Kind: model.Partial}
	g, err := Gather([]Part{{0, p, tensor.FromF32([]float32{1, 2}, 1, 2)}, {1, p, tensor.FromF32([]float32{10, 20}, 1, 2)}})
	if err != nil || g.F32()[0] != 11 || g.F32()[1] != 22 {
		t.Fatalf("%v %v", g, err)
	}
}

func TestGatherErrors(t *testing.T) {
	one := tensor.FromF32([]float32{1, 2}, 1, 2)
	cases := map[string][]Part{
		"uncovered":  {{0, sh(0, 2, 6), one}, {1, sh(2, 4, 6), one}},
		"overlap":    {{0, sh(0, 2, 3), one}, {1, sh(1, 3, 3), one}},
		"mixed kind": {{0, sh(0, 2, 4), one}, {1, model.Sharding{}, one}},
	}
	for name, parts := range cases {
		if _, err := Gather(parts); !errors.Is(err, ErrShardMismatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Gather([]Part{{0, sh(0, 3, 4), one}}); !errors.Is(err, ErrShape) {
		t.Errorf("width: %v", err)
	}
}

// TestGatherClippedVocabShards: vLLM pads a vocabulary of 101 to 128 and
// splits it evenly; with the padding dropped each rank holds its real
// columns only. Over 4 ranks of 32 padded columns rank 3 holds 96:101 (5
// columns); over 8 ranks of 16 rank 6 holds 96:101 and rank 7 none
// ([rows, 0]). Both gather to the [2, 101] tensor whose element [r, c] is
// 1000·r + c (built here, independent of the split).
func TestGatherClippedVocabShards(t *testing.T) {
	const vocab, rows = 101, 2
	for _, world := range []int{4, 8} {
		per := 128 / world
		var parts []Part
		for r := range world {
			lo, hi := min(r*per, vocab), min((r+1)*per, vocab)
			v := make([]float32, 0, rows*(hi-lo))
			for i := range rows {
				for c := lo; c < hi; c++ {
					v = append(v, float32(1000*i+c))
				}
			}
			parts = append(parts, Part{Rank: r, Shard: sh(lo, hi, vocab), Data: tensor.FromF32(v, rows, hi-lo)})
		}
		if w := parts[world-1].Data.Cols(); (world == 4 && w != 5) || (world == 8 && w != 0) {
			t.Fatalf("world %d: last rank has %d columns", world, w)
		}
		g, err := Gather(parts)
		if err != nil {
			t.Fatalf("world %d: %v", world, err)
		}
		if g.Rows() != rows || g.Cols() != vocab {
			t.Fatalf("world %d: gathered %v", world, g.Shape)
		}
		for i, x := range g.F32() {
			if want := float32(1000*(i/vocab) + i%vocab); x != want {
				t.Fatalf("world %d: element %d = %v, want %v", world, i, x, want)
			}
		}
		// A rank whose data still has its padded width is refused, naming
		// it.
		bad := append([]Part(nil), parts...)
		bad[world-1].Data = tensor.New(tensor.F32, rows, per)
		if _, err := Gather(bad); !errors.Is(err, ErrShape) {
			t.Fatalf("world %d: padded data under a clipped label: %v", world, err)
		}
	}
}
