package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlanSeqsFlag: `plan --seqs S` counts S cache slots of the longest
// sequence's capacity. By hand for stories260K at --tp 1 (5 layers, K and V
// of 4 kv heads × 8, f32: 1280 bytes per row): --max-tokens 100 is 16
// doubled to 128 rows a slot, 3 slots: 3·128·1280 = 491520 bytes; the
// KV line says what was counted, and --max-tokens 0 that none was (it said
// "1 sequence of up to 0 tokens"); --seq-len sizes the slots instead of
// --max-tokens; --seqs 0 and --seq-len -1 are refused, exit 2.
func TestPlanSeqsFlag(t *testing.T) {
	out, errs, code := runHsdb(t, "plan", "--max-tokens", "100", "--seqs", "3", "--json")
	var p struct {
		Ranks []struct {
			KV int64 `json:"kv_bytes"`
		} `json:"ranks"`
		Seqs int `json:"seqs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Ranks) != 1 || p.Ranks[0].KV != 491520 || p.Seqs != 3 {
		t.Errorf("--seqs 3 --max-tokens 100: exit %d, %+v (stderr %q); want one rank of 491520 KV bytes, seqs 3", code, p, errs)
	}
	out, _, code = runHsdb(t, "plan", "--max-tokens", "100", "--seqs", "3")
	if code != 0 || !strings.Contains(out, "; 3 sequences of up to 100 tokens (--seqs") {
		t.Errorf("text: exit %d:\n%s", code, out)
	}
	out, _, code = runHsdb(t, "plan", "--max-tokens", "0")
	if code != 0 || !strings.Contains(out, "; none counted (--max-tokens 0: weights alone)\n") || strings.Contains(out, "up to 0 tokens") {
		t.Errorf("--max-tokens 0: exit %d:\n%s", code, out)
	}
	// --seq-len 20 sizes each of the 3 slots for 20 tokens: 32 rows,
	// 3·32·1280 = 122880 bytes.
	out, _, code = runHsdb(t, "plan", "--max-tokens", "60", "--seqs", "3", "--seq-len", "20", "--json")
	p.Ranks = nil
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || len(p.Ranks) != 1 || p.Ranks[0].KV != 122880 {
		t.Errorf("--seqs 3 --seq-len 20: exit %d, %+v; want 122880 KV bytes", code, p)
	}
	_, errs, code = runHsdb(t, "plan", "--seq-len", "-1")
	if code != 2 || !strings.Contains(errs, "--seq-len -1: want 1 to") {
		t.Errorf("--seq-len -1: exit %d, stderr %q; want exit 2", code, errs)
	}
	_, errs, code = runHsdb(t, "plan", "--seqs", "0")
	if code != 2 || !strings.Contains(errs, "--seqs 0: want 1 to") {
		t.Errorf("--seqs 0: exit %d, stderr %q; want exit 2", code, errs)
	}
}
