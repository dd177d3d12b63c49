package check

import (
	"strings"
	"testing"

	"hsdb/engine/modelpath"
	"hsdb/inspect/capture"
)

// TestDumpOfAnotherModel: checking an hsdb dump with --model of another
// model failed every file with "closest  , cos 0.000000" (no candidate of
// the file's width) and never said the dump's manifest names another
// model. The directory's "model" rule compares the manifest's
// architecture and sizes with --model's and names both: by hand, the
// llama fixture (LlamaForCausalLM, hidden_size 96, 3 layers, vocab 101)
// against the qwen2 fixture (Qwen2ForCausalLM); against the llama fixture
// itself it passes.
func TestDumpOfAnotherModel(t *testing.T) {
	_, dir := llamaDump(t, []int{0, 2})
	for _, c := range []struct {
		model  string
		status capture.Status
		want   string
	}{
		{"../../testdata/hf/qwen2", capture.Fail, "the dump was written from LlamaForCausalLM (hidden_size 96, 3 layers, vocab_size 101), --model is Qwen2ForCausalLM"},
		{"../../testdata/hf/llama", capture.Pass, "LlamaForCausalLM (hidden_size 96, 3 layers, vocab_size 101), as --model"},
	} {
		d, err := modelpath.ConfigDims(c.model)
		if err != nil {
			t.Fatal(err)
		}
		pr := CheckPath(dir, CheckOptions{Dims: d})
		var got *RuleResult
		for i := range pr.Rules {
			if pr.Rules[i].Rule == "model" {
				got = &pr.Rules[i]
			}
		}
		if got == nil || got.Status != c.status || !strings.Contains(got.Detail, c.want) {
			t.Errorf("--model %s: %+v, want %v %q", c.model, got, c.status, c.want)
		}
	}
	if pr := CheckPath(dir, CheckOptions{}); len(pr.Rules) > 0 {
		for _, r := range pr.Rules {
			if r.Rule == "model" {
				t.Errorf("without --model: %+v", r)
			}
		}
	}
}
