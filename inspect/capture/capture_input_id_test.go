package capture

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJSONLRowIDKinds: a --data row's "id" is a string or a number (the
// row format OpenJSONL documents); an array, object or boolean is refused
// naming the file, line and what was given, before any forward pass.
// Expected ids by hand: "x" → x, 7 → 7, 1e3 → 1e3 (the number as
// written), null → the row's index.
func TestJSONLRowIDKinds(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ id, want string }{{`"x"`, "x"}, {`7`, "7"}, {`1e3`, "1e3"}, {`null`, "0"}} {
		p := filepath.Join(dir, "ok.jsonl")
		if err := os.WriteFile(p, []byte(`{"id": `+c.id+`, "input_ids": [1, 2]}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := OpenJSONL(p, nil, Limits{Vocab: 10})
		if err != nil {
			t.Fatalf("id %s: %v", c.id, err)
		}
		r, _ := in.Rows()
		_, s, err := r.Next()
		r.Close()
		if err != nil || s.ID != c.want {
			t.Errorf("id %s: got %q, %v; want %q", c.id, s.ID, err, c.want)
		}
	}
	for _, id := range []string{`[1]`, `{"a": 1}`, `true`} {
		p := filepath.Join(dir, "bad.jsonl")
		if err := os.WriteFile(p, []byte(`{"input_ids": [1]}`+"\n"+`{"id": `+id+`, "input_ids": [1, 2]}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenJSONL(p, nil, Limits{Vocab: 10})
		if want := p + `:2: "id" is ` + id + ": want a string or a number"; err == nil || err.Error() != want {
			t.Errorf("id %s: %v, want %q", id, err, want)
		}
	}
}
