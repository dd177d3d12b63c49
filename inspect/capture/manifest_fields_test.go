package capture

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadManifestFieldsRefused: a dump manifest whose fields cannot be
// what hsdb wrote is refused with ErrManifest naming the field, in JSON's
// terms: a negative sequence length or index was accepted (check then
// skipped the length rule, whose guard was length > 0), two sequences
// with one id were accepted (a trainer joining on id gets one sequence's
// hidden states for the other's), two sequences listing one file were
// accepted (one file checked as both), and a value of the wrong JSON type was
// reported in Go's terms ("cannot unmarshal number 2.5 into Go struct
// field JobInfo.job.sequences of type int"). A model.world_size below 1
// was read, and a rerun of the job said "Rerun with --tp -3".
func TestReadManifestFieldsRefused(t *testing.T) {
	const seq = `{"id": "a", "index": 0, "length": 3, "file": "seq_000000.safetensors", "tensors": {}}`
	for _, c := range []struct {
		name, body string
		wants      []string
	}{
		{"negative length", `"sequences": [` + strings.Replace(seq, `"length": 3`, `"length": -3`, 1) + `]`, []string{"sequences[0].length", "-3"}},
		{"negative index", `"sequences": [` + strings.Replace(seq, `"index": 0`, `"index": -1`, 1) + `]`, []string{"sequences[0].index", "-1"}},
		{"duplicate id", `"sequences": [` + seq + `, ` + strings.Replace(strings.Replace(seq, `"index": 0`, `"index": 1`, 1), "000000", "000001", 1) + `]`, []string{`sequences[0] and sequences[1]`, `id "a"`}},
		{"duplicate file", `"sequences": [` + seq + `, ` + strings.Replace(strings.Replace(seq, `"index": 0`, `"index": 1`, 1), `"id": "a"`, `"id": "b"`, 1) + `]`, []string{`sequences[0] and sequences[1]`, `file "seq_000000.safetensors"`}},
		{"negative job count", `"job": {"sequences": -1}, "sequences": []`, []string{"job.sequences", "-1"}},
		{"float", `"job": {"sequences": 2.5}, "sequences": []`, []string{"job.sequences: got number 2.5"}},
		{"string", `"complete": "yes", "sequences": []`, []string{"complete: got a JSON string"}},
		// A world size below 1 was advised back as "Rerun with --tp -3"
		// by a rerun of the job; 0 is a manifest without it.
		{"negative world size", `"model": {"world_size": -3}, "sequences": []`, []string{"model.world_size is -3", ">= 1"}},
		{"no world size", `"model": {"path": "p"}, "sequences": []`, []string{"model.world_size is 0"}},
	} {
		dir := t.TempDir()
		model := `"model": {"world_size": 1}, `
		if strings.Contains(c.body, `"model"`) {
			model = ""
		}
		body := `{"format": "` + ManifestFormat + `", ` + model + c.body + `}`
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadManifest(dir)
		if !errors.Is(err, ErrManifest) {
			t.Errorf("%s: ReadManifest = %v, want ErrManifest", c.name, err)
			continue
		}
		for _, w := range append(c.wants, ManifestName) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", c.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %q speaks of Go types", c.name, err)
		}
	}
}
