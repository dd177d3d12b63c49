package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallIDRuns makes the duplicate-id check spill after 4 rows and merge
// at 3 runs, so that a few hundred rows exercise every path.
func smallIDRuns(t *testing.T) string {
	t.Helper()
	oldCap, oldRuns := idRunCap, idMaxRuns
	idRunCap, idMaxRuns = 4, 3
	t.Cleanup(func() { idRunCap, idMaxRuns = oldCap, oldRuns })
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir) // os.CreateTemp's directory: checked empty afterwards
	return dir
}

// idRows writes a --data file of n rows, one per line, row i with token
// ids [1, i%7+2] and the id idOf(i) ("" for none); bad lists rows whose
// token id is out of the vocabulary (1000).
func idRows(t *testing.T, n int, idOf func(int) string, bad ...int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		tok := i%7 + 2
		for _, x := range bad {
			if x == i {
				tok = 1000
			}
		}
		if id := idOf(i); id != "" {
			fmt.Fprintf(&b, "{\"id\": %q, \"input_ids\": [1, %d]}\n", id, tok)
		} else {
			fmt.Fprintf(&b, "{\"input_ids\": [1, %d]}\n", tok)
		}
	}
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDuplicateIDsBounded: the duplicate-id check with its buffer of 4
// rows spilled and merged many times finds, among 300 rows, the earliest
// row whose id an earlier row has (rows 150 and 260 repeat rows 37's and
// 100's ids: row 150, line 151, is named with row 37), a row without an
// id clashing with an explicit one ("5" is row 5's default id), prefers a
// repeated id to a later bad row and a bad row to a later repeat, passes
// 300 distinct ids, and leaves no temporary file.
func TestDuplicateIDsBounded(t *testing.T) {
	tmp := smallIDRuns(t)
	lim := Limits{Vocab: 100}
	named := func(i int) string {
		switch i {
		case 150:
			return "s37"
		case 260:
			return "s100"
		}
		return fmt.Sprintf("s%d", i)
	}
	p := idRows(t, 300, named)
	_, err := OpenJSONL(p, nil, lim)
	if want := fmt.Sprintf("%s:151: sequences 150 and 37 share the id \"s37\"", p); err == nil || err.Error() != want {
		t.Errorf("repeated ids: %v\nwant %s", err, want)
	}
	p = idRows(t, 40, func(i int) string {
		if i == 20 {
			return "5"
		}
		return ""
	})
	if _, err := OpenJSONL(p, nil, lim); err == nil || !strings.Contains(err.Error(), ":21: sequences 20 and 5 share the id \"5\"") {
		t.Errorf("an explicit id equal to a row's default id: %v", err)
	}
	dup37 := func(i int) string {
		if i == 7 {
			return "s3"
		}
		return fmt.Sprintf("s%d", i)
	}
	if _, err := OpenJSONL(idRows(t, 40, dup37, 12), nil, lim); err == nil || !strings.Contains(err.Error(), "sequences 7 and 3 share") {
		t.Errorf("a repeat (row 7) before a bad row (12): %v, want the repeat", err)
	}
	if _, err := OpenJSONL(idRows(t, 40, dup37, 5), nil, lim); err == nil || !strings.Contains(err.Error(), ":6 (sequence 5, id \"s5\"): input_ids[1] = 1000") {
		t.Errorf("a bad row (5) before a repeat (row 7): %v, want the bad row", err)
	}
	in, err := OpenJSONL(idRows(t, 300, func(i int) string { return fmt.Sprintf("s%d", i) }), nil, lim)
	if err != nil || in.Len() != 300 {
		t.Fatalf("300 distinct ids: %v", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestIDCheckMemory: adding 5,000 rows holds at most the buffer of
// idRunCap entries and fewer than idMaxRuns runs at any time; the
// candidates are the groups' first two rows, earliest second row first,
// at most k of them.
func TestIDCheckMemory(t *testing.T) {
	smallIDRuns(t)
	var c idCheck
	defer c.close()
	for i := range 5000 {
		id := fmt.Sprintf("r%d", i)
		if i%1000 == 999 { // rows 999, 1999, ... repeat rows 10, 20, ...
			id = fmt.Sprintf("r%d", (i+1)/100)
		}
		if err := c.add(id, i); err != nil {
			t.Fatal(err)
		}
		if len(c.buf) >= idRunCap || len(c.runs) >= idMaxRuns {
			t.Fatalf("row %d: %d entries buffered, %d runs", i, len(c.buf), len(c.runs))
		}
	}
	got, err := c.candidates(3)
	if err != nil {
		t.Fatal(err)
	}
	want := []dupPair{{10, 999}, {20, 1999}, {30, 2999}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
}

// TestIDCheckLeavesNoFile: while the check holds spilled runs (and after
// a merge of them) its temporary file has no name in the temporary
// directory, so a process killed during a long --data validation leaves
// nothing behind; the candidates are still found (rows 10 and 999, by
// hand as in TestIDCheckMemory).
func TestIDCheckLeavesNoFile(t *testing.T) {
	smallIDRuns(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	var c idCheck
	defer c.close()
	for i := range 1000 {
		id := fmt.Sprintf("r%d", i)
		if i == 999 {
			id = "r10"
		}
		if err := c.add(id, i); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("row %d: %d file(s) named in the temporary directory (%s)", i, len(ents), ents[0].Name())
		}
	}
	if c.tmp == nil {
		t.Fatal("nothing spilled: the test checks nothing")
	}
	got, err := c.candidates(1)
	if err != nil || fmt.Sprint(got) != fmt.Sprint([]dupPair{{10, 999}}) {
		t.Errorf("candidates %v, %v", got, err)
	}
}
