package capture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"hsdb/engine"
)

// rawTensors reads a safetensors file by hand (8-byte little-endian header
// length, JSON header, data): each tensor's dtype, shape and the sha256 of
// its bytes — the reference the manifest's records are checked against.
func rawTensors(t *testing.T, path string) map[string]TensorRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b[:8])
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	out := map[string]TensorRecord{}
	for k, v := range hdr {
		if k == "__metadata__" {
			continue
		}
		var e struct {
			DType   string  `json:"dtype"`
			Shape   []int   `json:"shape"`
			Offsets []int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b[8+int64(n)+e.Offsets[0] : 8+int64(n)+e.Offsets[1]])
		out[k] = TensorRecord{Shape: e.Shape, DType: e.DType, SHA256: hex.EncodeToString(sum[:])}
	}
	return out
}

// i64SHA is the sha256 of vs as int64 little-endian bytes (how
// safetensors stores I64).
func i64SHA(vs ...int64) string {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestStreamedManifestByHand: a job of three rows (one with a loss_mask)
// over the HF llama fixture (3 layers, hidden 96, f32), layers 0 and 2.
// Finish writes manifest.json from the journal; every field is checked
// against what the test derives by hand: the header (format, complete,
// layers, what, dtype, HF indices 0→1 and 2→-1 as the last layer, job
// sequences, validation lines) and each record (id, index, length, file
// seq_{i:06d}.safetensors, loss_mask, validated, and input_ids /
// loss_mask / hidden_states.{0,2} shapes, dtypes and sha256, the ids'
// and mask's from the rows, the hidden states' from the file's bytes read
// by hand). Its bytes are also exactly encoding/json's MarshalIndent of
// the manifest it decodes to (the schema and layout writeManifest uses).
func TestStreamedManifestByHand(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rows := []struct {
		id   string
		ids  []int64
		mask []int64
	}{{"a", []int64{5, 7, 9}, nil}, {"b", []int64{11, 13}, []int64{0, 1}}, {"c", []int64{3, 4, 5, 6}, nil}}
	var data strings.Builder
	for _, r := range rows {
		ids, _ := json.Marshal(r.ids)
		fmt.Fprintf(&data, `{"id": %q, "input_ids": %s`, r.id, ids)
		if r.mask != nil {
			m, _ := json.Marshal(r.mask)
			fmt.Fprintf(&data, `, "loss_mask": %s`, m)
		}
		data.WriteString("}\n")
	}
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := OpenJSONL(p, nil, LimitsOf(e.Dims))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "o")
	res, err := RunCaptureJob(context.Background(), targetOf(e), in, JobOptions{Layers: []int{0, 2}, Out: out, MaxBatchTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Manifest.Sequences) != 0 || res.Manifest.Summary != (DumpSummary{Sequences: 3, Tokens: 9}) {
		t.Fatalf("Finish returned %d records, summary %+v; want none held, 3 sequences of 9 tokens", len(res.Manifest.Sequences), res.Manifest.Summary)
	}
	raw, err := os.ReadFile(filepath.Join(out, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.MarshalIndent(&m, "", "  "); !bytes.Equal(append(again, '\n'), raw) {
		t.Fatalf("manifest.json is not MarshalIndent's layout of its own content:\n%s", raw)
	}
	if m.Format != "hsdb-capture-dump/1" || !m.Complete || !slices.Equal(m.Capture.Layers, []int{0, 2}) || m.Capture.What != "stream" || m.Capture.DType != "F32" ||
		len(m.Capture.HFIndex) != 2 || !hfIndexIs(m.Capture.HFIndex, "hidden_states.0", 1) || !hfIndexNull(m.Capture.HFIndex, "hidden_states.2") ||
		m.Job == nil || m.Job.Sequences != 3 || m.Model.Dims["hidden_size"] != 96 || len(m.Replicas) != 0 {
		t.Fatalf("header: %+v %+v %+v", m, m.Capture, m.Job)
	}
	wantVal := map[string]string{"sequence count": "pass 3 sequences, 3 expected", "validated": "pass 3 of 3 files re-read and validated"}
	for _, v := range m.Validation {
		if w, ok := wantVal[v.Rule]; ok && v.Status+" "+v.Detail != w {
			t.Errorf("validation %s: %s %s, want %s", v.Rule, v.Status, v.Detail, w)
		}
		delete(wantVal, v.Rule)
	}
	if len(wantVal) != 0 {
		t.Errorf("validation lacks %v", wantVal)
	}
	if len(m.Sequences) != 3 {
		t.Fatalf("%d sequences, want 3", len(m.Sequences))
	}
	for i, r := range rows {
		rec := m.Sequences[i]
		file := fmt.Sprintf("seq_%06d.safetensors", i)
		if rec.ID != r.id || rec.Index != i || rec.Length != len(r.ids) || rec.File != file || rec.LossMask != (r.mask != nil) || !rec.Validated || rec.FileSHA256 != "" || rec.Bytes != 0 {
			t.Fatalf("sequence %d: %+v", i, rec)
		}
		got := rawTensors(t, filepath.Join(out, file))
		want := map[string]TensorRecord{"input_ids": {Shape: []int{len(r.ids)}, DType: "I64", SHA256: i64SHA(r.ids...)}}
		if r.mask != nil {
			want["loss_mask"] = TensorRecord{Shape: []int{len(r.ids)}, DType: "I64", SHA256: i64SHA(r.mask...)}
		}
		for _, l := range []string{"hidden_states.0", "hidden_states.2"} {
			want[l] = TensorRecord{Shape: []int{len(r.ids), 96}, DType: "F32", SHA256: got[l].SHA256}
		}
		if len(rec.Tensors) != len(want) || len(got) != len(want) {
			t.Fatalf("sequence %d: tensors %v in the manifest, %v in the file; want %v", i, rec.Tensors, got, want)
		}
		for k, w := range want {
			if g := rec.Tensors[k]; !slices.Equal(g.Shape, w.Shape) || g.DType != w.DType || g.SHA256 != w.SHA256 || g.SHA256 != got[k].SHA256 || len(g.SHA256) != 64 {
				t.Errorf("sequence %d %s: manifest %+v, file %+v, want %+v", i, k, g, got[k], w)
			}
		}
	}
}

// createdLine is the manifest's creation time: a resumed job keeps its
// first run's, so it is the one line two runs of a job may differ in.
var createdLine = regexp.MustCompile(`"created": "[^"]*"`)

// dirBytes reads every file under dir (relative path -> bytes), the
// manifest's created time blanked; a directory with no file fails t.
func dirBytes(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ManifestName {
			b = createdLine.ReplaceAll(b, []byte(`"created": ""`))
		}
		out[rel] = b
		return nil
	})
	if len(out) == 0 {
		t.Fatalf("no files under %s (two empty directories would compare equal)", dir)
	}
	return out
}

// TestResumeByteIdentical: a job of 40 rows (batches of at most 20 tokens)
// in hsdb's format and speculators', interrupted after 1, 3 and 9
// sequences and at 3 again with the journal's last record cut in half (a
// kill in the middle of its write) or followed by half a record, then
// resumed: the dump is byte for byte the uninterrupted run's (every file
// and manifest.json; only the creation time, which a resume keeps from
// its first run, is blanked), and the resume skipped what the journal
// held whole.
func TestResumeByteIdentical(t *testing.T) {
	e, err := engine.Open("../../testdata/hf/llama", engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	seqs := [][]int32{{5, 7, 9}, {11, 13}, {3, 4, 5, 6, 7, 8}, {21}, {30, 31, 32, 33}}
	const rows = 40
	data := writeHFRows(t, seqs, rows)
	for _, format := range []Format{FormatHsdb, FormatSpeculators} {
		opts := func(out string) JobOptions {
			o := JobOptions{Layers: []int{0, 2}, Out: out, MaxBatchTokens: 20, Writers: 3}
			if format == FormatSpeculators {
				plan, err := PlanLayers(FormatSpeculators, "1,3", e.Dims.Layers, parseInts)
				if err != nil {
					t.Fatal(err)
				}
				o.Plan = plan
			}
			return o
		}
		open := func() *Inputs {
			in, err := OpenJSONL(data, nil, LimitsOf(e.Dims))
			if err != nil {
				t.Fatal(err)
			}
			return in
		}
		ref := filepath.Join(t.TempDir(), "ref")
		if _, err := RunCaptureJob(context.Background(), targetOf(e), open(), opts(ref)); err != nil {
			t.Fatal(err)
		}
		want := dirBytes(t, ref)
		for _, tc := range []struct {
			after int
			cut   string // "", "half" (the last record cut short) or "extra" (half a record appended)
		}{{1, ""}, {3, ""}, {9, ""}, {3, "half"}, {3, "extra"}} {
			name := fmt.Sprintf("%s/after%d%s", format, tc.after, tc.cut)
			out := filepath.Join(t.TempDir(), "o")
			ctx, cancel := context.WithCancel(context.Background())
			o := opts(out)
			o.AfterBatch = func(done int) {
				if done >= tc.after {
					cancel()
				}
			}
			first, err := RunCaptureJob(ctx, targetOf(e), open(), o)
			cancel()
			if err == nil || first.Done < tc.after || first.Done >= rows {
				t.Fatalf("%s: first run done %d, %v; want interrupted", name, first.Done, err)
			}
			jp := filepath.Join(out+PartialSuffix, JournalName)
			j, err := os.ReadFile(jp)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(bytes.TrimSuffix(j, []byte("\n")), []byte("\n"))
			last := lines[len(lines)-1]
			whole := first.Done
			switch tc.cut {
			case "half":
				if !bytes.HasPrefix(last, []byte(`{"seq":`)) {
					t.Fatalf("%s: the journal's last line is %q, want a record", name, last)
				}
				j = j[:len(j)-len(last)/2-1]
				whole--
			case "extra":
				j = append(j, last[:len(last)/2]...)
			}
			if err := os.WriteFile(jp, j, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := RunCaptureJob(context.Background(), targetOf(e), open(), opts(out))
			if err != nil || res.Skipped != whole || res.Done != rows {
				t.Fatalf("%s: resume skipped %d, done %d, %v; want %d skipped, %d done", name, res.Skipped, res.Done, err, whole, rows)
			}
			got := dirBytes(t, out)
			if len(got) != len(want) {
				t.Fatalf("%s: %d files, the uninterrupted run %d", name, len(got), len(want))
			}
			for k, w := range want {
				if !bytes.Equal(got[k], w) {
					t.Fatalf("%s: %s differs from the uninterrupted run's", name, k)
				}
			}
		}
	}
}

// TestJournalRecordsSorted: journalRecords over a journal of 40 records
// written out of input order, index 7 and 19 recorded twice (the later
// record wins), replica lines between them, and a last line cut short —
// with the sort's buffer lowered to 5 entries and 3 runs, so it spills and
// merges — yields indices 0..38 once each in order (39, the cut record,
// is not read), each the latest record of its index, and the replica
// checks merged by their worst difference (0.5 on rank 3, by hand).
func TestJournalRecordsSorted(t *testing.T) {
	defer func(c, r int) { idRunCap, idMaxRuns = c, r }(idRunCap, idMaxRuns)
	idRunCap, idMaxRuns = 5, 3
	var b bytes.Buffer
	line := func(e journalEntry) {
		j, _ := json.Marshal(e)
		b.Write(append(j, '\n'))
	}
	order := []int{}
	for i := range 39 {
		order = append(order, (i*17)%39) // 17 is prime to 39: a permutation
	}
	for n, i := range order {
		line(journalEntry{Seq: &SeqRecord{ID: fmt.Sprintf("r%d", i), Index: i, Length: 1}})
		if n == 0 {
			line(journalEntry{Replicas: map[string]ReplicaRecord{"k": {Ranks: 2, MaxRelDiff: 0.5, WorstRank: 3}}})
			line(journalEntry{Seq: &SeqRecord{ID: "stale", Index: 19, Length: 9}})
		}
	}
	line(journalEntry{Seq: &SeqRecord{ID: "r7-again", Index: 7, Length: 2}})
	line(journalEntry{Replicas: map[string]ReplicaRecord{"k": {Ranks: 4, MaxRelDiff: 0.1, WorstRank: 1}}})
	j, _ := json.Marshal(journalEntry{Seq: &SeqRecord{ID: "r39", Index: 39}})
	b.Write(j[:len(j)/2])
	p := filepath.Join(t.TempDir(), JournalName)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	reps := map[string]ReplicaRecord{}
	var got []SeqRecord
	if err := journalRecords(p, reps, func(r SeqRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 39 {
		t.Fatalf("%d records, want 39", len(got))
	}
	for i, r := range got {
		id := fmt.Sprintf("r%d", i)
		if i == 7 {
			id = "r7-again"
		}
		if r.Index != i || r.ID != id {
			t.Fatalf("record %d: index %d id %q, want %d %q", i, r.Index, r.ID, i, id)
		}
	}
	if r := reps["k"]; len(reps) != 1 || !reflect.DeepEqual(r, ReplicaRecord{Ranks: 4, MaxRelDiff: 0.5, WorstRank: 3, OK: false}) {
		t.Fatalf("replicas %+v", reps)
	}
}

// TestOwnedStreamsManifest: hsdbOwned (what --force may replace) reads the
// manifest streamed and looks up only the names hsdb does not give its
// files. A hand-made dump whose manifest lists seq_000000.safetensors
// and extra.bin (a name hsdb never writes, but listed) holding both is
// hsdb's; adding an unlisted notes.txt is refused naming it; extra.bin
// made a directory is refused as not a regular file; 65 unlisted names
// are refused at once (maxForeign).
func TestOwnedStreamsManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	man := `{"format": "hsdb-capture-dump/1", "sequences": [{"id": "0", "file": "seq_000000.safetensors"}, {"id": "1", "file": "extra.bin"}], "complete": true}`
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "seq_000000.safetensors"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.bin"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hsdbOwned(dir, false); err != nil {
		t.Fatalf("a dump listing its files: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := hsdbOwned(dir, false); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "holds notes.txt, which hsdb did not write") {
		t.Fatalf("an unlisted notes.txt: %v", err)
	}
	os.Remove(filepath.Join(dir, "notes.txt"))
	os.Remove(filepath.Join(dir, "extra.bin"))
	if err := os.Mkdir(filepath.Join(dir, "extra.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hsdbOwned(dir, false); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "extra.bin in "+dir+" is not a regular file") {
		t.Fatalf("a listed directory: %v", err)
	}
	os.Remove(filepath.Join(dir, "extra.bin"))
	for i := range maxForeign + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("x%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := hsdbOwned(dir, false); !errors.Is(err, ErrNotDump) || !strings.Contains(err.Error(), "which hsdb did not write") {
		t.Fatalf("%d unlisted names: %v", maxForeign+1, err)
	}
}
