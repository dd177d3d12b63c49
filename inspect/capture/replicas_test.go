package capture

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"hsdb/engine/tensor"
)

// mom is the moments of the two-element copy [a, b], written out by hand.
func mom(a, b float64) tensor.Moments {
	abs := func(x float64) float64 {
		if x < 0 {
			return -x
		}
		return x
	}
	return tensor.Moments{Count: 2, Sum: a + b, SumSq: a*a + b*b, Min: min(a, b), Max: max(a, b), AbsMax: max(abs(a), abs(b))}
}

// TestReplicaOutliersNamesTheLoneRank: the copies [1, 2] on every rank
// but one, which holds [1, 2.5]: that rank is named alone, rank 0
// included (before, the first rank differing from rank 0 was named: with
// rank 0 off, rank 1). Every copy different: no lone rank. Two copies:
// no lone rank (which one is off cannot be told).
func TestReplicaOutliersNamesTheLoneRank(t *testing.T) {
	ids := []int{0, 1, 2, 3}
	good, bad := mom(1, 2), mom(1, 2.5)
	for _, c := range []struct {
		name      string
		ms        []tensor.Moments
		differing []int
		alone     int // -1: none
	}{
		{"rank 3 off", []tensor.Moments{good, good, good, bad}, []int{3}, 3},
		{"rank 0 off", []tensor.Moments{bad, good, good, good}, []int{1, 2, 3}, 0},
		{"all differ", []tensor.Moments{mom(1, 2), mom(1, 2.5), mom(1, 3), mom(1, 3.5)}, []int{1, 2, 3}, -1},
		{"two pairs", []tensor.Moments{good, good, bad, bad}, []int{2, 3}, -1},
		{"all agree", []tensor.Moments{good, good, good, good}, nil, -1},
	} {
		d, a := replicaOutliers(c.ms, ids)
		if !slices.Equal(d, c.differing) || (a == nil) != (c.alone < 0) || a != nil && *a != c.alone {
			t.Errorf("%s: differing %v alone %v, want %v %d", c.name, d, a, c.differing, c.alone)
		}
	}
	if d, a := replicaOutliers([]tensor.Moments{good, bad}, ids[:2]); !slices.Equal(d, []int{1}) || a != nil {
		t.Errorf("two ranks: differing %v alone %v, want [1] and none", d, a)
	}
}

// TestReplicaDescribe: the words a failed dump gives for each case, and
// the merge of two passes (the lone rank kept while both passes name it).
func TestReplicaDescribe(t *testing.T) {
	zero, two := 0, 2
	for _, c := range []struct {
		r    ReplicaRecord
		want string
	}{
		{ReplicaRecord{Ranks: 4, MaxRelDiff: 0.25, WorstRank: 1, Differing: []int{1, 2, 3}, Alone: &zero}, "rank 0's copy differs from the other 3 ranks', which agree (by 0.25)"},
		{ReplicaRecord{Ranks: 4, MaxRelDiff: 0.25, WorstRank: 2, Differing: []int{1, 2, 3}}, "the copies differ on every rank, not on one alone (ranks 1,2,3 differ from rank 0 by up to 0.25)"},
		{ReplicaRecord{Ranks: 2, MaxRelDiff: 0.25, WorstRank: 1, Differing: []int{1}}, "ranks 0 and 1 differ by 0.25 (two copies: which one is off cannot be told)"},
		{ReplicaRecord{Ranks: 4, MaxRelDiff: 0.25, WorstRank: 3, Differing: []int{2, 3}}, "ranks 2,3 differ from rank 0 by up to 0.25"},
		{ReplicaRecord{Ranks: 4, MaxRelDiff: 0.25, WorstRank: 3}, "rank 3 differs from rank 0 by 0.25"}, // an older manifest
	} {
		if got := c.r.Describe(); !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
	r := ReplicaRecord{}
	r.merge(ReplicaRecord{Ranks: 4, MaxRelDiff: 0.1, WorstRank: 2, Differing: []int{2}, Alone: &two})
	r.merge(ReplicaRecord{Ranks: 4}) // a pass where the copies agreed
	if want := (ReplicaRecord{Ranks: 4, MaxRelDiff: 0.1, WorstRank: 2, Differing: []int{2}, Alone: &two}); !reflect.DeepEqual(r, want) {
		t.Errorf("merged %+v, want %+v", r, want)
	}
	r.merge(ReplicaRecord{Ranks: 4, MaxRelDiff: 0.2, WorstRank: 1, Differing: []int{1, 2, 3}, Alone: &zero})
	if r.Alone != nil || !slices.Equal(r.Differing, []int{1, 2, 3}) || r.WorstRank != 1 || r.OK {
		t.Errorf("passes naming other lone ranks merged to %+v, want none alone, ranks 1,2,3, worst 1, not OK", r)
	}
}

// TestKeysInLayerOrder: layer 2 before layer 10, so a failed dump lists
// the first layer whose copies differ first.
func TestKeysInLayerOrder(t *testing.T) {
	got := keysInLayerOrder([]string{"hidden_states.10", "hidden_states.2", "model.layers.1.mlp.gate:topk_ids", "hidden_states.1"})
	want := []string{"hidden_states.1", "hidden_states.2", "hidden_states.10", "model.layers.1.mlp.gate:topk_ids"}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}
