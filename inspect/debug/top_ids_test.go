package debug

import (
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestTopRefusesIDs: `top topk_ids` at a MoE gate ranked expert ids as if
// they were activations ("channel 1 value 7 ×median 2.333": the top-k slot
// holding the larger id), two lines for K 10. topk_ids is refused, naming
// hist; the counts per expert (tokens_per_expert, whose channels are
// experts) and the float logits still rank: 8 channels each, by hand from
// the fixture's n_routed_experts.
func TestTopRefusesIDs(t *testing.T) {
	s := deepseekSession(t, 1, [][]int32{{20, 8, 87, 53, 95, 56, 7}})
	if _, err := s.Break("layers.1.mlp.gate", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	sl := client.Slice{Rank: -1, Seq: -1}
	if _, err := s.Top("topk_ids", 10, sl); err == nil || !strings.Contains(err.Error(), "`hist topk_ids`") {
		t.Errorf("top topk_ids: %v, want a refusal naming hist", err)
	}
	for _, name := range []string{"tokens_per_expert", "logits"} {
		rep, err := s.Top(name, 10, sl)
		if err != nil || len(rep.Channels) != 8 {
			t.Fatalf("top %s: %v, %+v: want 8 channels", name, err, rep)
		}
	}
	// A [1, experts] load has one row: --seq does not apply, said in
	// English ("has 1 row", not "has 1 rows").
	_, err := s.Top("tokens_per_expert", 3, client.Slice{Rank: -1, Seq: 0})
	if err == nil || !strings.Contains(err.Error(), "tokens_per_expert has 1 row, not one per token") {
		t.Errorf("top tokens_per_expert --seq 0: %v", err)
	}
}

// TestSetVarAtGateNamesInput: `set var topk_ids[0, 0] = 3` at a MoE gate
// was refused with "edit a tensor where it is made", though topk_ids is
// made at this very site (and used by the experts before the stop). The
// refusal names what does change the routing: the gate's input, the
// layer's post_attention_layernorm hidden_states, or a router fault.
func TestSetVarAtGateNamesInput(t *testing.T) {
	s := deepseekSession(t, 1, [][]int32{{20, 8, 87}})
	if _, err := s.Break("layers.2.mlp.gate", "", false); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	_, err := s.SetVar(client.EditRequest{Tensor: "topk_ids", Slice: client.Slice{Rank: -1, Seq: -1}, Op: "=", Value: 3})
	if err == nil || !strings.Contains(err.Error(), "edit model.layers.2.post_attention_layernorm's hidden_states") || !strings.Contains(err.Error(), "inject router-no-bias") {
		t.Errorf("set var topk_ids at the gate: %v", err)
	}
}
