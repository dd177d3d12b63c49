package capture

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hsdb/engine/tensor"
)

// Resuming a dump: an interrupted job's staging directory is taken over,
// its validated sequences kept and everything else removed.

// ResumeDump starts or resumes a batch job's dump of dir in DIR.partial.
// A staging directory of the same job (same JobInfo input digest, layers,
// what, dtype and model config digest) is resumed: sequences its manifest
// lists as validated whose files still hold the recorded checksums count as
// done (Done), everything else in it is discarded. A staging directory of
// another job is an ErrJobMismatch unless opts.Force, which starts over.
// Errors also: ErrExists (dir exists, without Force), I/O errors named.
func ResumeDump(dir string, info DumpInfo, opts DumpOptions) (*DumpWriter, error) {
	w, err := prepare(dir, info, opts)
	if err != nil {
		return nil, err
	}
	if err := w.resume(dir, opts); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *DumpWriter) resume(dir string, opts DumpOptions) error {
	w.resumable = true
	w.stage = dir + PartialSuffix
	old, err := ReadManifest(w.stage)
	switch {
	case err == nil:
		if why := sameJob(old, w.m); why != "" {
			if !opts.Force {
				return fmt.Errorf("dump %s: %w: %s was started by another job (%s); remove it or give --force to start over", dir, ErrJobMismatch, w.stage, why)
			}
			if err := removeOwned(w.stage); err != nil {
				return fmt.Errorf("dump %s: removing %s: %w", dir, w.stage, err)
			}
		} else {
			w.m.Created = old.Created
			w.keepValidated(old)
		}
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Lstat(w.stage); serr == nil && !opts.Force {
			return fmt.Errorf("dump %s: %w: %s exists without a manifest; remove it or give --force", dir, ErrJobMismatch, w.stage)
		}
		if err := removeOwned(w.stage); err != nil {
			return fmt.Errorf("dump %s: removing %s: %w", dir, w.stage, err)
		}
	default:
		if !opts.Force {
			return fmt.Errorf("dump %s: %w (give --force to start over)", dir, err)
		}
		if err := removeOwned(w.stage); err != nil {
			return fmt.Errorf("dump %s: removing %s: %w", dir, w.stage, err)
		}
	}
	if err := os.MkdirAll(w.stage, 0o755); err != nil {
		return fmt.Errorf("dump %s: creating %s: %w", dir, w.stage, diskFull(err))
	}
	w.removeStrays()
	if err := w.startJournal(); err != nil {
		return fmt.Errorf("dump %s: %w", dir, diskFull(err))
	}
	return nil
}

// sameJob says why two manifests describe different jobs ("" when the
// same).
func sameJob(a, b *Manifest) string {
	switch {
	case (a.Job == nil) != (b.Job == nil) || (a.Job != nil && (a.Job.InputSHA256 != b.Job.InputSHA256 || a.Job.Sequences != b.Job.Sequences)):
		return "other inputs"
	case joinInts(a.Capture.Layers) != joinInts(b.Capture.Layers):
		return fmt.Sprintf("layers %s, now %s", joinInts(a.Capture.Layers), joinInts(b.Capture.Layers))
	case a.Capture.Format != b.Capture.Format || joinInts(a.Capture.FormatIDs) != joinInts(b.Capture.FormatIDs) || a.Capture.Compressed != b.Capture.Compressed:
		return fmt.Sprintf("format %s ids %s, now %s ids %s", a.Capture.Format, joinInts(a.Capture.FormatIDs), b.Capture.Format, joinInts(b.Capture.FormatIDs))
	case a.Capture.What != b.Capture.What:
		return fmt.Sprintf("what %s, now %s", a.Capture.What, b.Capture.What)
	case a.Capture.DType != b.Capture.DType:
		return fmt.Sprintf("dtype %s, now %s", a.Capture.DType, b.Capture.DType)
	case a.Model.ConfigSHA256 != b.Model.ConfigSHA256:
		return "another model config"
	case a.Model.WorldSize != b.Model.WorldSize:
		return fmt.Sprintf("tp %d, now %d", a.Model.WorldSize, b.Model.WorldSize)
	}
	return ""
}

// keepValidated carries over the validated sequences of a resumed staging
// directory whose files are intact (every tensor's sha256 as recorded).
func (w *DumpWriter) keepValidated(old *Manifest) {
	for k, v := range old.Replicas {
		w.m.Replicas[k] = v
	}
	for _, rec := range old.Sequences {
		if !rec.Validated {
			continue
		}
		var err error
		if w.plan != nil {
			err = verifyTrainerFile(filepath.Join(w.stage, filepath.FromSlash(rec.File)), w.plan.Format, rec, nil, nil, nil)
		} else {
			err = verifyFile(filepath.Join(w.stage, rec.File), rec, nil, w.dtype)
		}
		if err != nil {
			continue
		}
		w.byID[rec.ID] = len(w.m.Sequences)
		w.m.Sequences = append(w.m.Sequences, rec)
	}
}

// removeStrays deletes files of the staging directory the manifest does
// not list (temporary files of an interrupted write, files of sequences
// that never validated).
func (w *DumpWriter) removeStrays() {
	keep := map[string]bool{ManifestName: true, JournalName: true}
	for _, r := range w.m.Sequences {
		keep[filepath.FromSlash(r.File)] = true
		if d, _, ok := strings.Cut(r.File, "/"); ok {
			keep[d] = true // a SpecForge rows_ directory
		}
	}
	filepath.WalkDir(w.stage, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(w.stage, p)
		if err != nil || rel == "." {
			return nil
		}
		if !keep[rel] {
			os.RemoveAll(p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
}

// keptDiffers says how the sequence a resume kept under s.ID differs from
// the input row s now read for it: "" when the file holds the row, else
// what differs (its length, its token ids, its loss_mask), compared
// through the record's shape and sha256 of the file's ids tensor
// (input_ids; speculators' token_ids, both i64 little-endian) and
// loss_mask (hsdb's own dump: present when the row has one; SpecForge:
// always, all ones for a row without one, as writeTrainerSeq writes it).
// The whole file's sha256 equals the one the kept job validated, so a row
// differs only when the --data file was changed while the earlier run read
// it (that run then failed: "changed while the job ran") and restored
// since: its file holds the changed row, not this one.
func (w *DumpWriter) keptDiffers(s InputSeq) string {
	i, ok := w.byID[s.ID]
	if !ok {
		return ""
	}
	rec := w.m.Sequences[i]
	if rec.Length != len(s.IDs) {
		return fmt.Sprintf("it holds %d tokens, the row %d", rec.Length, len(s.IDs))
	}
	ids := make([]int64, len(s.IDs))
	for j, v := range s.IDs {
		ids[j] = int64(v)
	}
	name := "input_ids"
	if w.plan != nil && w.plan.Format == FormatSpeculators {
		name = "token_ids"
	}
	if t, ok := rec.Tensors[name]; !ok || t.SHA256 != sha256Hex(tensor.FromI64(ids, len(ids)).Data) {
		return "its token ids differ from the row's"
	}
	mask := s.LossMask
	if mask == nil && w.plan != nil && w.plan.Format == FormatSpecForge {
		mask = make([]int64, len(s.IDs))
		for j := range mask {
			mask[j] = 1
		}
	}
	t, has := rec.Tensors["loss_mask"]
	switch {
	case w.plan == nil && rec.LossMask != (s.LossMask != nil):
		return "its loss_mask is there where the row has none, or missing"
	case has && mask != nil && t.SHA256 != sha256Hex(tensor.FromI64(mask, len(mask)).Data):
		return "its loss_mask differs from the row's"
	}
	return ""
}

// forget drops a kept sequence from the resume, so the job captures its
// row again (its file is replaced then; until then a later resume finds
// the journal's stale record differing again).
func (w *DumpWriter) forget(id string) {
	i, ok := w.byID[id]
	if !ok {
		return
	}
	w.m.Sequences = slices.Delete(w.m.Sequences, i, i+1)
	delete(w.byID, id)
	for j := i; j < len(w.m.Sequences); j++ {
		w.byID[w.m.Sequences[j].ID] = j
	}
}

// recheckKept reads in once and forgets every kept sequence whose file no
// longer holds its row (keptDiffers), before the batches run. It returns
// one line per forgotten sequence, naming it and why, for the job's log.
func (w *DumpWriter) recheckKept(in *Inputs) ([]string, error) {
	rows, err := in.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var notes []string
	for {
		i, s, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return notes, nil
		}
		if err != nil {
			return notes, err
		}
		if why := w.keptDiffers(s); why != "" {
			w.forget(s.ID)
			notes = append(notes, fmt.Sprintf("sequence %d (id %q) in %s does not hold its input row (%s; the input was changed while an earlier run read it): captured again", i, s.ID, w.stage, why))
		}
	}
}
