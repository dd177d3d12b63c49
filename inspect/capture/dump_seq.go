package capture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// SetWriters sets how many sequence files Add writes and validates at
// once (each on its own goroutine: building, sha256, fsync and the
// re-read are CPU and disk work that overlap); n < 1 means 1. Sequences
// are still recorded in order.
func (w *DumpWriter) SetWriters(n int) { w.workers = n }

// writeAll writes seqs' files, up to w.workers at once, and returns their
// records in order, or the first sequence's error.
func (w *DumpWriter) writeAll(seqs []*SeqCapture, ids []string) ([]SeqRecord, error) {
	recs := make([]SeqRecord, len(seqs))
	errs := make([]error, len(seqs))
	sem := make(chan struct{}, max(w.workers, 1))
	var wg sync.WaitGroup
	for i, s := range seqs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			recs[i], errs[i] = w.writeSeq(s, ids[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// Add writes one safetensors file per sequence (input_ids [len] I64,
// loss_mask [len] I64 when given, hidden_states.{layer} [len, hidden] and
// site captures [len, width] in the dump dtype), each atomically
// (safetensors.WriteFile: temporary file, fsync, re-read, rename), then
// re-reads it and validates it (verifyFile): names, shapes, dtypes, the
// sha256 of each tensor, values equal to the captured values, all finite,
// layers pairwise different. Only then is it recorded in the manifest (for
// a batch job, rewritten atomically after each call). reps are the
// cross-rank checks of the pass (merged per key). Errors: ErrInvalid
// naming the sequence and what failed (its file is removed);
// safetensors.ErrDiskFull; other I/O errors naming the file.
func (w *DumpWriter) Add(seqs []*SeqCapture, reps map[string]ReplicaRecord) error {
	ids := make([]string, len(seqs))
	for i, s := range seqs {
		ids[i] = seqID(s)
		if w.Done(ids[i]) {
			return fmt.Errorf("dump %s: sequence %s is already in the dump", w.dir, ids[i])
		}
	}
	recs, err := w.writeAll(seqs, ids)
	if err != nil {
		return err
	}
	return w.commit(ids, recs, reps)
}

// seqID is the id a sequence is recorded under: its input id, or its
// index.
func seqID(s *SeqCapture) string {
	if s.ID == "" {
		return fmt.Sprint(s.Seq)
	}
	return s.ID
}

// commit records validated sequences (ids and their records, in order)
// and a pass's cross-rank checks in the manifest and, for a batch job, the
// journal (fsynced). Only one goroutine may commit at a time.
func (w *DumpWriter) commit(ids []string, recs []SeqRecord, reps map[string]ReplicaRecord) error {
	for k, r := range reps {
		old, ok := w.m.Replicas[k]
		if !ok || r.MaxRelDiff > old.MaxRelDiff {
			old.MaxRelDiff, old.WorstRank = r.MaxRelDiff, r.WorstRank
		}
		old.Ranks = r.Ranks
		old.OK = old.MaxRelDiff <= ReplicaTol
		w.m.Replicas[k] = old
	}
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
	for i, rec := range recs {
		w.byID[ids[i]] = len(w.m.Sequences)
		w.m.Sequences = append(w.m.Sequences, rec)
	}
	if w.resumable {
		if err := w.appendJournal(w.m.Sequences[len(w.m.Sequences)-len(recs):], reps); err != nil {
			return fmt.Errorf("dump %s: %w", w.dir, diskFull(err))
		}
	}
	return nil
}

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
			return nil, nil, fmt.Errorf("%w: nothing was captured for %s (did the forward pass reach its site?)", ErrInvalid, k)
		}
		if t.Rows() != n {
			return nil, nil, fmt.Errorf("%w: %s has %d rows for %d tokens", ErrInvalid, k, t.Rows(), n)
		}
		if !t.DType.IsFloat() {
			out = append(out, safetensors.Named{Name: k, T: t})
			continue
		}
		ct := t
		if t.DType != w.dtype {
			ct = t.Convert(w.dtype)
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
	if problems := contentProblems(named, w.m.Capture.Layers, w.hidden); len(problems) > 0 {
		return rec, fmt.Errorf("dump %s: sequence %s: %w: %s", w.dir, id, ErrInvalid, strings.Join(problems, "; "))
	}
	meta := map[string]string{"format": "pt", "hsdb": ManifestFormat, "sequence": id, "what": w.m.Capture.What, "layers": joinInts(w.m.Capture.Layers)}
	if dumpTestHook != nil {
		if err := dumpTestHook(path); err != nil {
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
// id (and SpecForge's 8-byte loss_mask entry; hsdb's own dump's when the
// input has one is not counted).
func (w *DumpWriter) bytesPerToken(k int) int64 {
	n := int64(k*w.hidden*w.dtype.Size()) + 8
	if w.plan != nil && w.plan.Format == FormatSpecForge {
		n += 8
	}
	return n
}
