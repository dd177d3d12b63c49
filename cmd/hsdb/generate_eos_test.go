package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// eosFixture copies the HF llama fixture's config.json and weights into a
// temp dir, with config.json's eos_token_id and bos_token_id set from cfg
// (a JSON value, "" to drop the field) and generation_config.json written
// from gen ("" for none).
func eosFixture(t *testing.T, cfgBOS, cfgEOS, gen string) string {
	t.Helper()
	dir := t.TempDir()
	w, err := os.ReadFile("../../testdata/hf/llama/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile("../../testdata/hf/llama/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(c, &cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg, "bos_token_id")
	delete(cfg, "eos_token_id")
	for k, v := range map[string]string{"bos_token_id": cfgBOS, "eos_token_id": cfgEOS} {
		if v != "" {
			cfg[k] = json.RawMessage(v)
		}
	}
	c, _ = json.Marshal(cfg)
	for name, data := range map[string][]byte{"model.safetensors": w, "config.json": c} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if gen != "" {
		if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(gen), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func generateIDs(t *testing.T, dir string) []int32 {
	t.Helper()
	out, errs, code := runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "64", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		IDs []int32 `json:"ids"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	return res.IDs
}

// prefixBefore is what HF's greedy generate returns of a full greedy run
// when it stops at the ids in stop: the tokens before the first of them
// (HF keeps the eos token in its output; hsdb's --json ids leave it out,
// as run.c does not print it).
func prefixBefore(full []int32, stop ...int32) []int32 {
	for i, id := range full {
		for _, s := range stop {
			if id == s {
				return full[:i]
			}
		}
	}
	return full
}

// TestGenerateStopsAtConfigEOS: an HF model's greedy generation ends at
// config.json's eos_token_id (an int or a list), and generation_config.json's
// eos_token_id overrides config.json's, as transformers' GenerationConfig
// does. The expectation is derived from the same model's unstopped run (no
// eos anywhere and no tokenizer: 62 tokens) cut by hand at the first stop id.
func TestGenerateStopsAtConfigEOS(t *testing.T) {
	full := generateIDs(t, eosFixture(t, "", "", ""))
	if len(full) != 62 { // -n 64 positions: positions 2..63 are sampled
		t.Fatalf("unstopped run: %d ids, want 62", len(full))
	}
	a, b, c := full[3], full[1], full[5]
	for _, tc := range []struct {
		name        string
		cfgEOS, gen string
		stop        []int32
	}{
		{"config int", itoaJSON(a), "", []int32{a}},
		{"config list", "[" + itoaJSON(c) + "," + itoaJSON(b) + "]", "", []int32{c, b}},
		{"generation_config overrides", itoaJSON(b), `{"eos_token_id": ` + itoaJSON(c) + `}`, []int32{c}},
		{"generation_config without eos keeps config's", itoaJSON(a), `{"bos_token_id": 1}`, []int32{a}},
	} {
		got := generateIDs(t, eosFixture(t, "1", tc.cfgEOS, tc.gen))
		want := prefixBefore(full, tc.stop...)
		if len(want) == len(full) || !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v (stop %v)", tc.name, got, want, tc.stop)
		}
	}
}

func itoaJSON(id int32) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// TestGenerateRefusesBadTokenIDs: nonsense bos/eos ids in config.json or
// generation_config.json are refused naming the file and the field.
func TestGenerateRefusesBadTokenIDs(t *testing.T) {
	for _, tc := range []struct {
		cfgBOS, cfgEOS, gen string
		file, field         string
	}{
		{"1", "-1", "", "config.json", "eos_token_id"},
		{"1", "101", "", "config.json", "eos_token_id"}, // the fixture's vocab_size is 101
		{"1", "2.5", "", "config.json", "eos_token_id"},
		{"1", `"2"`, "", "config.json", "eos_token_id"},
		{"1", "[2, true]", "", "config.json", "eos_token_id"},
		{"1", "[]", "", "config.json", "eos_token_id"},
		{"500", "2", "", "config.json", "bos_token_id"},
		{"1", "2", `{"eos_token_id": [2, 1e9]}`, "generation_config.json", "eos_token_id"},
		{"1", "2", `{"bos_token_id": -3}`, "generation_config.json", "bos_token_id"},
	} {
		dir := eosFixture(t, tc.cfgBOS, tc.cfgEOS, tc.gen)
		out, errs, code := runHsdb(t, "generate", "--model", dir, "--ids", "1,2,3", "-n", "8", "--json")
		if code != 1 || !strings.Contains(out+errs, filepath.Join(dir, tc.file)) || !strings.Contains(out+errs, tc.field) {
			t.Errorf("bos %s eos %s gen %s: exit %d, want 1 naming %s and %s: %s%s", tc.cfgBOS, tc.cfgEOS, tc.gen, code, tc.file, tc.field, out, errs)
		}
	}
}
