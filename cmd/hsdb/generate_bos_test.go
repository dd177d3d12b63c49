package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// generateJSON runs generate --json on the model at dir with args and
// returns its prompt_ids and ids.
func generateJSON(t *testing.T, dir string, args ...string) (prompt, ids []int32) {
	t.Helper()
	out, errs, code := runHsdb(t, append([]string{"generate", "--model", dir, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("%s %v: exit %d: %s%s", dir, args, code, out, errs)
	}
	var res struct {
		Prompt []int32 `json:"prompt_ids"`
		IDs    []int32 `json:"ids"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	return res.Prompt, res.IDs
}

// TestGenerateStartsFromConfigBOS: `hsdb generate` without --ids,
// --prompt or a tokenizer starts from the model's bos_token_id, as HF's
// generate does when given no input ids (a [1, 1] tensor of
// generation_config.bos_token_id): generation_config.json's where it sets
// one, else config.json's. It refused ("no BOS id without a tokenizer")
// though the files name it. The ids expected are read by hand from the
// files written here (and testdata/hf/llama's, which say 1 in both); the
// generated ids are those of --ids with that one id.
func TestGenerateStartsFromConfigBOS(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  string
		want int32
	}{
		{"testdata/hf/llama", "../../testdata/hf/llama", 1},
		{"config.json alone", eosFixture(t, "7", "", ""), 7},
		{"generation_config.json overrides", eosFixture(t, "7", "", `{"bos_token_id": 5}`), 5},
		{"generation_config.json without it keeps config.json's", eosFixture(t, "7", "", `{"eos_token_id": 3}`), 7},
		{"a list of one", eosFixture(t, "[9]", "", ""), 9},
	} {
		prompt, ids := generateJSON(t, c.dir, "-n", "6")
		if !slices.Equal(prompt, []int32{c.want}) {
			t.Errorf("%s: prompt_ids %v, want [%d]", c.name, prompt, c.want)
			continue
		}
		if _, fromIDs := generateJSON(t, c.dir, "-n", "6", "--ids", itoaJSON(c.want)); !slices.Equal(ids, fromIDs) {
			t.Errorf("%s: ids %v; --ids %d gives %v", c.name, ids, c.want, fromIDs)
		}
	}
}

// TestGenerateNoBOSRefused: without --ids, a tokenizer or a bos_token_id
// (Qwen2's config.json says null and its generation_config.json nothing,
// as the qwen2 fixture's), generate refuses as HF's generate does, naming
// the field and both files, before the load (the directory has no
// weights); a list of two ids is no one id to start from. Nothing to start
// from is a usage error, exit 2 (give --ids), as the same refusal beside a
// tokenizer without BOS (TestGenerateTokenizerWithoutBOSStartsFromConfigBOS)
// exits; it exited 1 here, a model that fails to load. A malformed
// bos_token_id stays exit 1: the model's files are at fault.
func TestGenerateNoBOSRefused(t *testing.T) {
	dir := configOnlyDir(t, "qwen2")
	_, errs, code := runHsdb(t, "generate", "--model", dir, "-n", "3")
	if code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, filepath.Join(dir, "config.json")+" sets no bos_token_id, which generation starts from") ||
		!strings.Contains(errs, "give --ids") || !strings.Contains(errs, "no tokenizer in "+dir) {
		t.Errorf("config-only qwen2: exit %d, stderr %q", code, errs)
	}
	fixture := "../../testdata/hf/qwen2"
	out, errs, code := runHsdb(t, "generate", "--model", fixture, "-n", "3")
	if code != 2 || out != "" || !strings.Contains(errs, "neither "+filepath.Join(fixture, "generation_config.json")+" nor "+filepath.Join(fixture, "config.json")+" sets bos_token_id") {
		t.Errorf("qwen2 fixture: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	two := eosFixture(t, "[1, 2]", "", "")
	_, errs, code = runHsdb(t, "generate", "--model", two, "-n", "3")
	if code != 1 || !strings.Contains(errs, filepath.Join(two, "config.json")+": bos_token_id: a list of 2 ids [1 2]") {
		t.Errorf("bos_token_id [1, 2]: exit %d, stderr %q", code, errs)
	}
}
