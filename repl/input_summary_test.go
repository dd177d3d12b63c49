package repl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputSummarisesBigBatch: `input file` of the 200 stories printed
// every sequence's length on one line and every sequence's ids in full
// (about 50,000 ids) when the batch was set. Setting a batch of more than
// 4 sequences shows the first 4, the shortest and longest, and says how to
// list the rest; `input` alone lists every sequence. By hand: 6 rows of
// lengths 2, 3, 4, 5, 6, 7.
func TestInputSummarisesBigBatch(t *testing.T) {
	p := filepath.Join(t.TempDir(), "in.jsonl")
	var rows []string
	for n := 2; n <= 7; n++ {
		ids := []string{"1"}
		for i := 1; i < n; i++ {
			ids = append(ids, "400")
		}
		rows = append(rows, `{"input_ids": [`+strings.Join(ids, ", ")+`]}`)
	}
	if err := os.WriteFile(p, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, 1)
	out := f.AssertExec("input file "+p, "batch: 6 sequences, 27 tokens (shortest 2, longest 7)", "  seq 3: ", "… 2 more (`input` alone lists them all)")
	if strings.Contains(out, "seq 4:") || strings.Contains(out, "seq 5:") {
		t.Errorf("setting the batch listed every sequence:\n%s", out)
	}
	all := f.AssertExec("input", "seq 5: [1, 400, 400, 400, 400, 400, 400]")
	if strings.Contains(all, "more (") {
		t.Errorf("input alone summarised:\n%s", all)
	}
	f.AssertExec(batchCmd, "(seq 0: 6, seq 1: 4)", "seq 1: [1, 400, 281, 350]")
}
