package debug

import (
	"math"
	"strings"
	"testing"

	"hsdb/engine/model"
	"hsdb/inspect/client"
)

// TestSkipAllReduceAtMoE: DeepSeek's MoE block all-reduces its routed and
// shared experts' partial sums once (vLLM's DeepseekV2MoE; the experts are
// built with reduce_results=False), so `inject skip-allreduce at
// layers.2.mlp` was refused ("no RowParallelLinear there") and the missed
// MoE all-reduce could not be rehearsed. Derived from the definition: with
// the fault, each rank's output is its own routed + shared; without it,
// the sum of every rank's routed + shared. At the shared expert's
// down_proj (which does not reduce) the refusal names the MoE block.
func TestSkipAllReduceAtMoE(t *testing.T) {
	const tp = 2
	s := deepseekSession(t, tp, [][]int32{{20, 8, 87, 53, 95, 56, 7}})
	l := NewLocal(s)
	err := l.Inject(client.Fault{Kind: model.FaultSkipAllReduce, Rank: -1, Site: "model.layers.2.mlp.shared_experts.down_proj"})
	if err == nil || !strings.Contains(err.Error(), "inject at model.layers.2.mlp") {
		t.Fatalf("skip-allreduce at the shared expert's down_proj: %v, want a refusal naming model.layers.2.mlp", err)
	}
	if _, err := s.Break("layers.2.mlp", "", false); err != nil {
		t.Fatal(err)
	}
	vals := func(name string, r int) [][]float64 {
		t.Helper()
		v, err := s.Values(name, client.Index{}, client.Slice{Rank: r, Seq: -1})
		if err != nil {
			t.Fatal(err)
		}
		return v.Ranks[0].Values
	}
	for _, fault := range []bool{false, true} {
		if fault {
			if err := l.Inject(client.Fault{Kind: model.FaultSkipAllReduce, Rank: -1, Site: "model.layers.2.mlp"}); err != nil {
				t.Fatal(err)
			}
		}
		stopped(t)(s.Run())
		var part [tp][][]float64
		for r := range tp {
			routed, shared := vals("routed", r), vals("shared", r)
			part[r] = make([][]float64, len(routed))
			for i := range routed {
				part[r][i] = make([]float64, len(routed[i]))
				for j := range routed[i] {
					part[r][i][j] = routed[i][j] + shared[i][j]
				}
			}
		}
		differ := false
		for r := range tp {
			out := vals("output", r)
			for i := range out {
				for j, x := range out[i] {
					want := part[r][i][j]
					if !fault {
						want = part[0][i][j] + part[1][i][j]
					} else if part[0][i][j] != part[1][i][j] {
						differ = true
					}
					if d := math.Abs(x - want); !(d <= 1e-5*(1+math.Abs(want))) {
						t.Fatalf("fault %v: output rank %d [%d, %d] = %g, want %g", fault, r, i, j, x, want)
					}
				}
			}
		}
		if fault && !differ {
			t.Fatalf("the ranks' partial sums are equal: the test cannot tell a skipped all-reduce")
		}
	}
}
