package debug

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hsdb/inspect/client"
)

// TestPatchReadsBatchSeqsOnly: patch and compare read the sequences of the
// dump that the batch holds, not the whole dump: they read every sequence
// whole, as f32, before looking at the batch, so one sequence patched from
// a capture job's dump of thousands exhausted memory. Here the dump's
// sequence 1 file is emptied (a file the batch does not need, which was read
// and refused); a batch of sequence 0 alone patches and compares, and a
// batch of both is refused naming sequence 1's file. An armed patch reads
// the dump when the run reaches the site: the file emptied after `patch`
// is named then.
func TestPatchReadsBatchSeqsOnly(t *testing.T) {
	s, l := twoSeqRun(t)
	two := patchSeqs
	dir := filepath.Join(t.TempDir(), "d")
	m, err := l.Dump(dir, client.DumpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "d2")
	m2, err := l.Dump(dir2, client.DumpRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seq1 := filepath.Join(dir, m.Sequences[1].File)
	if err := os.WriteFile(seq1, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Break("layers.2", "", false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBatch(two[:1]); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	if _, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1}); err != nil {
		t.Fatalf("patch of sequence 0 with sequence 1's file emptied: %v", err)
	}
	rep, err := s.Compare(dir)
	if err != nil {
		t.Fatalf("compare of sequence 0 with sequence 1's file emptied: %v", err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Seq != 0 || !(rep.Rows[0].MaxAbs <= 0) {
		t.Fatalf("compare after the patch from the same run's dump: %+v, want one row, sequence 0, max |Δ| 0", rep.Rows)
	}

	if err := s.SetBatch(two); err != nil {
		t.Fatal(err)
	}
	stopped(t)(s.Run())
	if _, err := s.Patch(client.PatchRequest{Tensor: "stream", Dump: dir, Seq: -1}); err == nil || !strings.Contains(err.Error(), seq1) {
		t.Errorf("patch of both sequences: %v, want sequence 1's file %s named", err, seq1)
	}
	if _, err := s.Compare(dir); err == nil || !strings.Contains(err.Error(), seq1) {
		t.Errorf("compare of both sequences: %v, want sequence 1's file %s named", err, seq1)
	}

	// Armed: the dump is whole at `patch`, sequence 0's file emptied before
	// the run reaches the site.
	if _, err := s.Patch(client.PatchRequest{Site: "layers.2", Tensor: "stream", Dump: dir2, Seq: -1}); err != nil {
		t.Fatalf("arming a patch from a whole dump: %v", err)
	}
	seq0 := filepath.Join(dir2, m2.Sequences[0].File)
	if err := os.WriteFile(seq0, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(); err == nil || !strings.Contains(err.Error(), seq0) {
		t.Errorf("run with the armed patch's file emptied: %v, want %s named", err, seq0)
	}
}

// patchSeqs is the batch of twoSeqRun: two sequences of the stories260K
// vocabulary (4 and 3 tokens).
var patchSeqs = [][]int32{{1, 403, 407, 261}, {1, 400, 281}}

// twoSeqRun returns a session at tp 2 that captured layer 2's stream over
// patchSeqs and ran to the end (ready to dump), and its local client.
func twoSeqRun(t *testing.T) (*Session, *Local) {
	t.Helper()
	s := newSession(t, 2)
	l := NewLocal(s)
	if err := l.CaptureLayers([]int{2}, "stream"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBatch(patchSeqs); err != nil {
		t.Fatal(err)
	}
	done(t)(s.Run())
	return s, l
}
