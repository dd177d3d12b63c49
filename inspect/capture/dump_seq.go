package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// seqTensors builds the file's tensors in writing order (8-byte elements
// first, so every tensor starts aligned) and the expected f32 values of
// the float ones (what was captured, rounded to the dump dtype).
func (w *DumpWriter) seqTensors(s *SeqCapture) ([]safetensors.Named, map[string][]float32, error) {
	n := s.Len()
	ids := make([]int64, n)
	for i, v := range s.IDs {
		ids[i] = int64(v)
	}
	out := []safetensors.Named{{Name: "input_ids", T: tensor.FromI64(ids, n)}}
	if s.LossMask != nil {
		if len(s.LossMask) != n {
			return nil, nil, fmt.Errorf("%w: loss_mask has %d elements, the sequence %d tokens", ErrInvalid, len(s.LossMask), n)
		}
		out = append(out, safetensors.Named{Name: "loss_mask", T: tensor.FromI64(s.LossMask, n)})
	}
	want := map[string][]float32{}
	var keys []string
	for _, l := range w.m.Capture.Layers {
		keys = append(keys, fmt.Sprintf("hidden_states.%d", l))
	}
	for _, si := range w.m.Capture.Sites {
		keys = append(keys, si.Key)
	}
	var floats []safetensors.Named
	for _, k := range keys {
		t, ok := s.Tensors[k]
		if !ok {
			return nil, nil, fmt.Errorf("%w: %w for %s (did the forward pass reach its site?)", ErrInvalid, ErrNotCaptured, k)
		}
		if t.Rows() < n {
			// A decode step stopped before this key's site appended its row.
			return nil, nil, fmt.Errorf("%w: %s has %d rows for %d tokens: %w for its last %d (did the forward pass reach its site?)", ErrInvalid, k, t.Rows(), n, ErrNotCaptured, n-t.Rows())
		}
		if t.Rows() != n {
			return nil, nil, fmt.Errorf("%w: %s has %d rows for %d tokens", ErrInvalid, k, t.Rows(), n)
		}
		if !t.DType.IsFloat() {
			out = append(out, safetensors.Named{Name: k, T: t})
			continue
		}
		ct, err := convertFinite(k, t, w.dtype)
		if err != nil {
			return nil, nil, err
		}
		want[k] = ct.ToF32()
		floats = append(floats, safetensors.Named{Name: k, T: ct})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T.DType.Size() > out[j].T.DType.Size() })
	return append(out, floats...), want, nil
}

func (w *DumpWriter) writeSeq(s *SeqCapture, id string) (SeqRecord, error) {
	if w.plan != nil {
		return w.writeTrainerSeq(s, id)
	}
	file := fmt.Sprintf("seq_%06d.safetensors", s.Seq)
	path := filepath.Join(w.stage, file)
	rec := SeqRecord{ID: id, Index: s.Seq, Length: s.Len(), File: file, LossMask: s.LossMask != nil, Tensors: map[string]TensorRecord{}}
	named, want, err := w.seqTensors(s)
	if err != nil {
		return rec, fmt.Errorf("dump %s: sequence %s: %w", w.dir, id, err)
	}
	for _, nt := range named {
		rec.Tensors[nt.Name] = TensorRecord{Shape: append([]int(nil), nt.T.Shape...), DType: nt.T.DType.SafetensorsName(), SHA256: sha256Hex(nt.T.Data)}
	}
	if problems := contentProblems(named, w.hidden); len(problems) > 0 {
		return rec, fmt.Errorf("dump %s: sequence %s: %w: %s", w.dir, id, ErrInvalid, strings.Join(problems, "; "))
	}
	meta := map[string]string{"format": "pt", "hsdb": ManifestFormat, "sequence": id, "what": w.m.Capture.What, "layers": joinInts(w.m.Capture.Layers)}
	if dumpTestHook != nil {
		if err := runTestHook(path); err != nil {
			return rec, fmt.Errorf("dump %s: sequence %s: writing %s: %w", w.dir, id, path, diskFull(err))
		}
	}
	if err := safetensors.WriteFile(path, named, meta); err != nil {
		return rec, fmt.Errorf("dump %s: sequence %s: %w", w.dir, id, err)
	}
	if err := verifyFile(path, rec, want, w.dtype); err != nil {
		os.Remove(path)
		return rec, fmt.Errorf("dump %s: sequence %s: %w", w.dir, id, err)
	}
	rec.Validated = true
	return rec, nil
}

// stageScan is what scanStage found: the dump's summary, the first
// not-validated ids (at most 6), the input indices of the files listed
// and the first file that is not as its record says.
type stageScan struct {
	sum         DumpSummary
	unvalidated []string
	nbad        int
	files       indexSet
	stageErr    error
}

// scanStage is Finish's last look before the rename, reading the
// journal's records in input order (journalRecords): every file listed is
// in the staging directory under the name its index gives it
// (seqFileName), as a regular file of the size its tensors need at least
// (stageErr names the first that is not). Errors: the journal's I/O.
func (w *DumpWriter) scanStage() (*stageScan, error) {
	st := &stageScan{}
	err := journalRecords(filepath.Join(w.stage, JournalName), nil, func(r SeqRecord) error {
		st.sum.add(r)
		if !r.Validated {
			st.nbad++
			if len(st.unvalidated) < 6 {
				st.unvalidated = append(st.unvalidated, r.ID)
			}
		}
		if st.stageErr == nil {
			st.stageErr = w.checkSeqFile(r)
		}
		st.files.add(r.Index)
		return nil
	})
	return st, err
}

// checkSeqFile says why r's file is not as recorded: not named for its
// index, missing, not a regular file, or shorter than its tensors.
func (w *DumpWriter) checkSeqFile(r SeqRecord) error {
	if r.File != w.seqFileName(r.Index) {
		return fmt.Errorf("%w: sequence %s: its file %q is not the name of input index %d (%q)", ErrInvalid, r.ID, r.File, r.Index, w.seqFileName(r.Index))
	}
	fi, err := os.Lstat(filepath.Join(w.stage, filepath.FromSlash(r.File)))
	if err != nil {
		return fmt.Errorf("%w: sequence %s: its file is missing from %s: %v", ErrInvalid, r.ID, w.stage, err)
	}
	need := int64(0)
	for _, t := range r.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			n *= int64(d)
		}
		if dt, err := tensor.ParseDType(t.DType); err == nil {
			need += n * int64(dt.Size())
		}
	}
	if r.Bytes > 0 { // a trainer file records its exact size (a .ckpt.gz is smaller than its tensors)
		need = r.Bytes
	}
	if !fi.Mode().IsRegular() || fi.Size() < need {
		return fmt.Errorf("%w: sequence %s: %s is a %s of %d bytes, want a file of at least %d", ErrInvalid, r.ID, r.File, kindOf(fi), fi.Size(), need)
	}
	return nil
}

// seqFileName is the file the sequence of input index i is written to:
// hsdb's seq_{i:06d}.safetensors or the plan format's (trainerFile).
func (w *DumpWriter) seqFileName(i int) string {
	if w.plan != nil {
		return trainerFile(w.plan.Format, i, w.compress)
	}
	return fmt.Sprintf("seq_%06d.safetensors", i)
}

// seqID is the id a sequence is recorded under: its input id, or its
// index.
func seqID(s *SeqCapture) string {
	if s.ID == "" {
		return fmt.Sprint(s.Seq)
	}
	return s.ID
}

// mergeReplicas adds a pass's cross-rank checks to the manifest's: per
// key the worst relative difference seen so far (and its rank), the
// latest rank count, OK while the worst is within ReplicaTol.
func (w *DumpWriter) mergeReplicas(reps map[string]ReplicaRecord) {
	mergeReplicaInto(w.m.Replicas, reps)
}

// commit records validated sequences (their records, in order)
// and a pass's cross-rank checks in the journal (fsynced for a batch job;
// a one-shot dump also keeps the records in m.Sequences), as Add does for the sequences it writes itself; the
// capture job writes files on several goroutines and commits each batch
// here once all are validated. Only one goroutine may commit at a time.
func (w *DumpWriter) commit(recs []SeqRecord, reps map[string]ReplicaRecord) error {
	w.mergeReplicas(reps)
	if w.plan != nil { // trainer files were renamed without a directory fsync: make the names durable first
		dirs := map[string]bool{w.stage: true} // the stage holds SpecForge's rows_ directories
		for _, rec := range recs {
			dirs[filepath.Dir(filepath.Join(w.stage, filepath.FromSlash(rec.File)))] = true
		}
		for d := range dirs {
			if err := syncDir(d); err != nil {
				return fmt.Errorf("dump %s: %w", w.dir, diskFull(err))
			}
		}
	}
	if len(recs) == 0 && len(reps) == 0 {
		return nil
	}
	if err := w.appendJournal(recs, reps); err != nil {
		return fmt.Errorf("dump %s: %w", w.dir, diskFull(err))
	}
	w.count += len(recs)
	if !w.resumable {
		w.m.Sequences = append(w.m.Sequences, recs...)
	}
	return nil
}

// recBytes is what a written sequence's file holds: its recorded size
// (trainer formats), or the sum of its tensors (hsdb's own files).
func recBytes(r SeqRecord) int64 {
	if r.Bytes > 0 {
		return r.Bytes
	}
	var n int64
	for _, t := range r.Tensors {
		dt, _ := tensor.FromSafetensors(t.DType)
		n += int64(tensor.Numel(t.Shape) * dt.Size())
	}
	return n
}

// bytesPerToken is what a token costs in the files, headers aside: k
// captured vectors of hidden_size in the dump dtype plus the 8-byte token
// id, and an 8-byte loss_mask entry where the files hold one: SpecForge's
// always, hsdb's own dump's when every input row has one (masked; a job
// whose rows differ is counted without it). Speculators files hold none.
func (w *DumpWriter) bytesPerToken(k int, masked bool) int64 {
	n := int64(k*w.hidden*w.dtype.Size()) + 8
	switch {
	case w.plan != nil && w.plan.Format == FormatSpecForge:
		n += 8
	case masked && (w.plan == nil || w.plan.Format == FormatHsdb || w.plan.Format == ""):
		n += 8
	}
	return n
}
