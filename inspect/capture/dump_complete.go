package capture

import (
	"errors"
	"fmt"
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
	Dir      string
	Manifest *Manifest // as read from Dir
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
// count of sequences, and every listed file is a plain file that holds
// the recorded sha256 of every tensor (verifyFile; verifyTrainerFile for
// speculators and SpecForge files), with no other file there (unlisted:
// what `hsdb check`'s files rule asks); else an ErrExists saying which of
// these fails, and that --force replaces it. Reads every file once;
// writes nothing.
func (w *DumpWriter) completeJob() error {
	old, err := ReadManifest(w.dir)
	if err != nil {
		return fmt.Errorf("dump %s: %w, and its manifest cannot be read (%v); give --force to replace it", w.dir, ErrExists, err)
	}
	if why := sameJob(old, w.m); why != "" {
		if setting, msg := otherNumerics(old, w.m, len(old.Sequences), true); msg != "" && otherJob(old, w.m) == "" {
			// Not mixed, as a resume is not (otherNumerics); nor replaced
			// without --force, which the message offers.
			return fmt.Errorf("dump %s: %w, finished by this job at another %s: %s", w.dir, ErrExists, setting, msg)
		}
		return fmt.Errorf("dump %s: %w, written by another job (%s); give --force to replace it, or choose another --out", w.dir, ErrExists, why)
	}
	if !old.Complete {
		return fmt.Errorf("dump %s: %w, written by this job, but its manifest is not marked complete; give --force to capture it again", w.dir, ErrExists)
	}
	if old.Job != nil && len(old.Sequences) != old.Job.Sequences {
		return fmt.Errorf("dump %s: %w, written by this job, but it lists %s of the input's %d; give --force to capture it again",
			w.dir, ErrExists, plural.N(len(old.Sequences), "sequence"), old.Job.Sequences)
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
	for _, rec := range old.Sequences {
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
	old.Summary = DumpSummary{Sequences: len(old.Sequences)}
	for _, rec := range old.Sequences {
		old.Summary.Tokens += int64(rec.Length)
		old.Summary.FileBytes += rec.Bytes
	}
	return &CompleteDump{Dir: w.dir, Manifest: old}
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
