package engine

import (
	"errors"
	"path/filepath"
	"testing"

	"hsdb/engine/model"
)

// TestPlanTPTreeSize: a Llama config of 4096 decoder layers (and 4096
// heads, so that --tp 4096 splits them) at --tp 4096 has a module tree of
// 4096 × (0 routed experts + 1) × 4096 = 16777216 parameter shards, over
// hsdb's 2²² = 4194304; at --tp 1 it has 4096. The cause is --tp, yet
// `hsdb plan` refused it as a config.json bound (exit 1). CheckFit, which
// every command runs before its load as a usage error (exit 2), now
// refuses it naming --tp and the largest world size the model takes,
// 4194304 / 4096 = 1024, and the plan with the same words; --tp 1024 plans.
func TestPlanTPTreeSize(t *testing.T) {
	dir := filepath.Join("..", "testdata", "configs", "llama-4096-layers") // config.json alone
	const msg = "--tp 4096: num_hidden_layers 4096 × (n_routed_experts 0 + 1) × world size 4096 is 16777216 parameter shards, more than hsdb plans (4194304); the world size must be at most 1024 for this model"
	if err := CheckFit(dir, Options{TP: 4096}, 1); err == nil || err.Error() != dir+": "+msg {
		t.Errorf("CheckFit --tp 4096: %v\nwant %s: %s", err, dir, msg)
	}
	if _, err := PlanDir(dir, PlanOptions{TP: 4096}); err == nil || err.Error() != "--model "+dir+": "+msg || !errors.Is(err, model.ErrConfigLimit) {
		t.Errorf("plan --tp 4096: %v\nwant --model %s: %s (wrapping model.ErrConfigLimit, as every bound)", err, dir, msg)
	}
	if err := CheckFit(dir, Options{TP: 1024}, 1); err != nil {
		t.Errorf("CheckFit --tp 1024: %v", err)
	}
	if _, err := PlanDir(dir, PlanOptions{TP: 1024}); err != nil {
		t.Errorf("plan --tp 1024: %v", err)
	}
}
