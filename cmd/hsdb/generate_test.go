package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func runHsdb(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := hsdbMain(args, stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

// TestGenerateStories: `hsdb generate` on the embedded stories260K at
// temperature 0 prints exactly llama2.c run.c's greedy text (256 steps from
// BOS, stopping at BOS), as documented in llama2.c's doc/stories260K.md.
func TestGenerateStories(t *testing.T) {
	want, err := os.ReadFile("../../testdata/stories260K/expected_greedy.txt")
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runHsdb(t, "generate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if strings.TrimRight(out, "\n") != string(want) {
		t.Fatalf("generated\n%q\nwant\n%q", out, want)
	}
	// The same at --tp 4: rank splits must not change greedy decoding.
	out4, errs, code := runHsdb(t, "generate", "--tp", "4")
	if code != 0 || out4 != out {
		t.Fatalf("--tp 4: exit %d %s\n%q", code, errs, out4)
	}
}

// TestGenerateJSON: --json prints the ids; with --model on an HF fixture and
// explicit ids.
func TestGenerateJSON(t *testing.T) {
	out, errs, code := runHsdb(t, "generate", "--model", "../../testdata/hf/llama", "--ids", "1,2,3", "-n", "5", "--temperature", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		IDs       []int32 `json:"ids"`
		PromptIDs []int32 `json:"prompt_ids"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// positions 2, 3 and 4 are sampled (run.c's -n counts the prompt).
	if len(res.IDs) != 3 || len(res.PromptIDs) != 3 {
		t.Fatalf("%+v", res)
	}
	for _, id := range res.IDs {
		if id < 0 || id >= 101 {
			t.Fatalf("id %d outside the fixture's vocab 101", id)
		}
	}
}

// TestGenerateErrors: bad ids and an out-of-range id are one clear message.
func TestGenerateErrors(t *testing.T) {
	_, errs, code := runHsdb(t, "generate", "--ids", "1,x")
	if code != 2 || !strings.Contains(errs, `token id "x" is not an integer`) {
		t.Fatalf("exit %d %q", code, errs)
	}
	out, errs, code := runHsdb(t, "generate", "--ids", "1,9999")
	if code != 2 || out != "" || !strings.Contains(errs, "prompt token 1 is id 9999, outside the vocabulary [0, 512)") {
		t.Fatalf("exit %d %q %q", code, out, errs)
	}
	for _, args := range [][]string{{"extra"}, {"--temperature", "NaN"}, {"--temperature", "-1"}, {"--temperature", "Inf"}, {"-n", "0"}, {"--ids", "1,2,3", "-n", "2"}} {
		if _, errs, code := runHsdb(t, append([]string{"generate"}, args...)...); code != 2 || errs == "" {
			t.Errorf("generate %v: exit %d %q", args, code, errs)
		}
	}
}
