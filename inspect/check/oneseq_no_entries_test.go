package check

import (
	"path/filepath"
	"strings"
	"testing"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// TestOneSeqRuleNoEntries: a file holding only a seq_lens tensor [12, 7]
// and other tensors, no hidden states and no input_ids (an HF reference
// file), failed the one-sequence rule with "2 sequences flattened into
// one: 12 + 7 tokens", a finding about rows the file does not have; with
// no entries the rule is skipped, as shape and values are.
func TestOneSeqRuleNoEntries(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ref.safetensors")
	named := []safetensors.Named{
		{Name: "seq_lens", T: tensor.FromI64([]int64{12, 7}, 2)},
		{Name: "logits", T: tensor.FromF32(make([]float32, 19*4), 19, 4)},
	}
	if err := safetensors.WriteFile(p, named, nil); err != nil {
		t.Fatal(err)
	}
	r := CheckFile(p, CheckOptions{})
	rr, ok := r.Rule(capture.RuleOneSeq)
	if !ok || rr.Status != capture.Skip || strings.Contains(rr.Detail, "flattened") {
		t.Errorf("one-sequence rule %+v; want a skip, no flattening found", rr)
	}
}
