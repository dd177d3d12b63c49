package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"hsdb/inspect/plural"
)

// ErrComplete: a batch job's dump directory already holds the finished
// dump of the same job, every file verified against its manifest; nothing
// was written (CompleteDump carries the manifest).
var ErrComplete = errors.New("already complete and valid")

// CompleteDump is the error ResumeDump returns for a dump the same job
// finished before (errors.Is ErrComplete): a rerun of a finished capture
// has nothing to do, which is success, not a clash. Manifest holds its
// Sequences and their Summary.
type CompleteDump struct {
	Dir      string    // the dump directory (--out), as the job was given it
	Manifest *Manifest // as read from Dir, Summary counted from its Sequences

	differs func(SeqRecord, InputSeq) string // the writer's keptDiffers
}

// checkRows reads in (the job's input) once and returns an ErrExists
// naming the first row whose sequence the finished dump does not hold
// (keptDiffers: another id, length, token ids or loss_mask; a record
// moved to another row's file with its tensors' sha256 kept verifies as
// intact), and --force; nil when every row is held. completeJob has made
// the records' indices a permutation of the input's rows; ctx cancelled
// returns ErrInterrupted between rows.
func (c *CompleteDump) checkRows(ctx context.Context, in *Inputs) error {
	if c.differs == nil { // not made by completeJob: nothing to compare with
		return nil
	}
	pos := make([]int, len(c.Manifest.Sequences)) // input row -> record
	for k, rec := range c.Manifest.Sequences {
		if rec.Index < 0 || rec.Index >= len(pos) { // completeJob refused it; never indexed out of range
			return fmt.Errorf("dump %s: %w, written by this job, but sequences[%d] has index %d, outside the input's %d rows; give --force to capture it again", c.Dir, ErrExists, k, rec.Index, len(pos))
		}
		pos[rec.Index] = k
	}
	rows, err := in.Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		i, s, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("dump %s: %w while comparing the finished dump with the input, at row %d; nothing was changed", c.Dir, ErrInterrupted, i)
		}
		if i >= len(pos) {
			return fmt.Errorf("dump %s: %w, written by this job, but the input has more rows than its %d sequences; give --force to capture it again", c.Dir, ErrExists, len(pos))
		}
		if why := c.differs(c.Manifest.Sequences[pos[i]], s); why != "" {
			return fmt.Errorf("dump %s: %w, written by this job, but its sequence of the input's row %d (id %s) does not hold that row (%s); give --force to capture it again",
				c.Dir, ErrExists, i, QuoteFileText(s.ID), why)
		}
	}
}

// Error says the dump is complete and valid, naming it and its count of
// sequences.
func (c *CompleteDump) Error() string {
	return fmt.Sprintf("dump %s: %v: the same job (%s), every file re-read against the manifest's sha256; nothing was rewritten",
		c.Dir, ErrComplete, plural.N(len(c.Manifest.Sequences), "sequence"))
}

// Unwrap returns ErrComplete, for errors.Is.
func (c *CompleteDump) Unwrap() error { return ErrComplete }

// maxFailedNames bounds the files completeJob names when a finished dump
// fails its check; the rest are counted.
const maxFailedNames = 3

// completeJob answers a batch job whose dump directory w.dir exists
// (prepare, under the dump's lock, without --force): a *CompleteDump when
// its manifest is of the same job (sameJob: inputs, layers, format, what,
// dtype, model config, and numericsOf: tp, device, --dtype, --ep), marked complete, lists the job's
// count of sequences, each input row once (its index in range, in the
// file this job names for it: seqFileName), and every listed file is a
// plain file that holds
// the recorded sha256 of every tensor (verifyFile; verifyTrainerFile for
// speculators and SpecForge files), with no other file there (unlisted:
// what `hsdb check`'s files rule asks); else an ErrExists saying which of
// these fails, and that --force replaces it; ErrInterrupted when w.stop
// closes between files. Reads every file once; writes nothing.
func (w *DumpWriter) completeJob() error {
	old, err := ReadManifest(w.dir)
	if err != nil {
		return fmt.Errorf("dump %s: %w, and its manifest cannot be read (%v); give --force to replace it", w.dir, ErrExists, err)
	}
	if why := otherJob(old, w.m); why != "" {
		return fmt.Errorf("dump %s: %w, written by another job (%s); give --force to replace it, or choose another --out", w.dir, ErrExists, why)
	}
	if setting, msg := otherNumerics(old, w.m, len(old.Sequences), true); msg != "" {
		// The same job at other numerics (sameJob's other half): not
		// mixed, as a resume is not; nor replaced without --force, which
		// the message offers.
		return fmt.Errorf("dump %s: %w, finished by this job at another %s: %s", w.dir, ErrExists, setting, msg)
	}
	if !old.Complete {
		return fmt.Errorf("dump %s: %w, written by this job, but its manifest is not marked complete; give --force to capture it again", w.dir, ErrExists)
	}
	if old.Job != nil && len(old.Sequences) != old.Job.Sequences {
		return fmt.Errorf("dump %s: %w, written by this job, but it lists %s of the input's %d; give --force to capture it again",
			w.dir, ErrExists, plural.N(len(old.Sequences), "sequence"), old.Job.Sequences)
	}
	for i, rec := range old.Sequences {
		// With the count above and one file per sequence (ReadManifest),
		// each index in range and in its own name covers the whole input.
		if old.Job != nil && rec.Index >= old.Job.Sequences {
			return fmt.Errorf("dump %s: %w, written by this job, but sequences[%d] has index %d, beyond the input's %d rows: it does not hold every row of the input; give --force to capture it again",
				w.dir, ErrExists, i, rec.Index, old.Job.Sequences)
		}
		if want := w.seqFileName(rec.Index); rec.File != want {
			return fmt.Errorf("dump %s: %w, written by this job, but sequences[%d] (the input's row %d) is in %s, not %s, the file this job writes it to; give --force to capture it again",
				w.dir, ErrExists, i, rec.Index, QuoteFileText(rec.File), want)
		}
	}
	listed := make(map[string]bool, len(old.Sequences))
	for _, rec := range old.Sequences {
		listed[rec.File] = true
	}
	if extra := unlisted(w.dir, listed); len(extra) > 0 {
		return fmt.Errorf("dump %s: %w, written by this job, but it holds files its manifest does not list: %s; give --force to capture it again",
			w.dir, ErrExists, strings.Join(extra, ", "))
	}
	var bad []string
	nbad := 0
	for i, rec := range old.Sequences {
		if stopped(w.stop) {
			return fmt.Errorf("dump %s: %w while verifying the finished dump, after %d of %d files; nothing was changed", w.dir, ErrInterrupted, i, len(old.Sequences))
		}
		err := CheckSeqPath(w.dir, rec.File)
		if err == nil && w.plan != nil {
			err = verifyTrainerFile(filepath.Join(w.dir, filepath.FromSlash(rec.File)), w.plan.Format, rec, nil, nil, nil)
		} else if err == nil {
			err = verifyFile(filepath.Join(w.dir, rec.File), rec, nil, w.dtype)
		}
		if err != nil {
			nbad++
			if len(bad) < maxFailedNames {
				bad = append(bad, err.Error())
			}
		}
	}
	if nbad > 0 {
		more := ""
		if nbad > len(bad) {
			more = fmt.Sprintf("; and %d more", nbad-len(bad))
		}
		return fmt.Errorf("dump %s: %w, written by this job, but its files fail their check (%d of %d): %s%s; give --force to capture it again",
			w.dir, ErrExists, nbad, len(old.Sequences), strings.Join(bad, "; "), more)
	}
	old.Summary = DumpSummary{}
	for _, rec := range old.Sequences {
		old.Summary.add(rec)
	}
	return &CompleteDump{Dir: w.dir, Manifest: old, differs: w.keptDiffers}
}

// maxUnlistedNames bounds the files unlisted returns.
const maxUnlistedNames = 4

// unlisted returns up to maxUnlistedNames entries under a finished dump
// dir that are not directories and neither manifest.json nor a file its
// manifest lists (listed: slash paths), as slash paths relative to dir; a
// last entry counts the rest. Links are not followed.
func unlisted(dir string, listed map[string]bool) []string {
	var out []string
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if listed[rel] || rel == ManifestName {
			return nil
		}
		if n++; n <= maxUnlistedNames {
			out = append(out, rel)
		}
		return nil
	})
	if n > maxUnlistedNames {
		out = append(out, fmt.Sprintf("and %d more", n-maxUnlistedNames))
	}
	return out
}

// stopped reports whether stop is closed (DumpOptions.Stop; nil never is).
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
