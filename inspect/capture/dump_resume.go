package capture

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
