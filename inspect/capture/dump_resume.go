package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
)

// Resuming a dump: an interrupted job's staging directory is taken over,
// its validated sequences kept and everything else removed.

// ResumeDump starts or resumes a batch job's dump of dir in DIR.partial.
// A staging directory of the same job (same JobInfo input digest, layers,
// what, dtype and model config digest) is resumed: sequences its manifest
// lists as validated whose files still hold the recorded checksums count as
// done (Done), everything else hsdb wrote in it is discarded; one holding
// anything hsdb did not write (hsdbOwned) is an ErrNotDump naming it, and
// nothing is removed. A staging directory of another job is an
// ErrJobMismatch unless opts.Force, which starts over. When dir itself
// exists (without Force) and holds this job's finished dump, every file
// verified, the error is a *CompleteDump (ErrComplete): nothing is left to
// do. Errors also: ErrExists (dir exists, without Force, and is not that:
// the message says why), I/O errors named.
func ResumeDump(dir string, info DumpInfo, opts DumpOptions) (*DumpWriter, error) {
	opts.job = true
	w, err := prepare(dir, info, opts)
	if err != nil {
		return nil, err
	}
	if err := w.resume(w.dir, opts); err != nil { // cleaned: "out/" is staged in "out.partial", not inside out
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *DumpWriter) resume(dir string, opts DumpOptions) error {
	w.resumable = true
	w.stage = dir + PartialSuffix
	old, err := readStageHeader(w.stage)
	kept := ""
	switch {
	case err == nil:
		if why := sameJob(old, w.m); why != "" {
			if !opts.Force {
				if otherJob(old, w.m) == "" { // only the numerics differ: the journal is read for the count then
					setting, msg := otherNumerics(old, w.m, validatedCount(w.stage), false)
					return fmt.Errorf("dump %s: %w: %s was started by this job at another %s: %s", dir, ErrJobMismatch, w.stage, setting, msg)
				}
				return fmt.Errorf("dump %s: %w: %s was started by another job (%s); remove it or give --force to start over", dir, ErrJobMismatch, w.stage, why)
			}
			if err := removeOwned(w.stage); err != nil {
				return fmt.Errorf("dump %s: removing %s: %w", dir, w.stage, err)
			}
		} else {
			// A resume deletes what the staging directory holds besides
			// hsdb's files (removeStrays): anything else in it was put
			// there by someone, and is named instead of removed.
			if err := hsdbOwned(w.stage, true); err != nil {
				return fmt.Errorf("dump %s: resuming %s, which would remove what hsdb did not write: %w; move it out of %s and run again", dir, w.stage, err, w.stage)
			}
			w.m.Created = old.Created
			if kept, err = w.keepValidated(); err != nil {
				return fmt.Errorf("dump %s: %w", dir, diskFull(err))
			}
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
	if err := w.startJournal(kept); err != nil {
		if kept != "" {
			os.Remove(kept)
		}
		return fmt.Errorf("dump %s: %w", dir, diskFull(err))
	}
	w.removeStrays(&w.done)
	return nil
}

// validatedCount is how many validated sequence records the journal of
// staging directory stage holds (0 when it cannot be read): for messages.
func validatedCount(stage string) int {
	n := 0
	journalRecords(filepath.Join(stage, JournalName), map[string]ReplicaRecord{}, func(rec SeqRecord) error {
		if rec.Validated {
			n++
		}
		return nil
	})
	return n
}

// readStageHeader reads a staging directory's manifest.json (its header:
// startJournal writes it without sequences, which are in the journal),
// streamed. Errors: the file's (fs.ErrNotExist when absent) or
// ErrManifest for bad JSON or another format.
func readStageHeader(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	f, err := regfile.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var m Manifest
	if err := streamManifest(bufio.NewReader(f), &m, func(SeqRecord) error { return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%s: %w: format %s, want %q", p, ErrManifest, QuoteFileText(m.Format), ManifestFormat)
	}
	if err := checkManifestSizes(&m); err != nil { // as ReadManifest: a world_size of -3 was advised back as --tp -3
		return nil, fmt.Errorf("%s: %w: %v", p, ErrManifest, err)
	}
	return &m, nil
}

// sameJob says why two manifests describe different jobs ("" when the
// same): the inputs, what is captured, the model (otherJob), or its
// numerics (numericsOf: tp, device kind, --dtype, --ep).
func sameJob(a, b *Manifest) string {
	if why := otherJob(a, b); why != "" {
		return why
	}
	if d := numericsOf(a.Model, b.Model); d != nil {
		return d.was + ", now " + d.now
	}
	return ""
}

// otherJob says why two manifests are of different jobs whatever their
// numerics ("" when only the numerics may differ): the inputs, what is
// captured, the model config. A refusal offers rerunning with the old
// numerics only when this is "" (otherNumerics): a rerun of another
// job's command at that --tp would be refused again.
func otherJob(a, b *Manifest) string {
	switch {
	case a.Job == nil && b.Job != nil:
		return "the debugger's `dump` wrote it, not a capture job"
	case (a.Job == nil) != (b.Job == nil) || (a.Job != nil && (a.Job.InputSHA256 != b.Job.InputSHA256 || a.Job.Sequences != b.Job.Sequences)):
		return "other inputs"
	// The format's ids before hsdb's layers: --layers was given in the
	// format's ids (speculators 0,1,2 -> 0,1,3 is hsdb layers 0,1 -> 0,2).
	case a.Capture.Format != b.Capture.Format || joinInts(a.Capture.FormatIDs) != joinInts(b.Capture.FormatIDs) || a.Capture.Compressed != b.Capture.Compressed:
		return fmt.Sprintf("format %s, now %s", FileText(formatWords(a.Capture)), formatWords(b.Capture))
	case joinInts(a.Capture.Layers) != joinInts(b.Capture.Layers):
		return fmt.Sprintf("layers %s, now %s", FileText(joinInts(a.Capture.Layers)), joinInts(b.Capture.Layers))
	case a.Capture.What != b.Capture.What:
		return fmt.Sprintf("what %s, now %s", FileText(string(a.Capture.What)), b.Capture.What)
	case a.Capture.DType != b.Capture.DType:
		return fmt.Sprintf("dtype %s, now %s", FileText(a.Capture.DTypeName()), b.Capture.DTypeName())
	case a.Model.ConfigSHA256 != b.Model.ConfigSHA256:
		return "another model config"
	}
	return ""
}

// formatWords names a capture's file format and its layer ids as the
// flags give them, for otherJob: "hsdb layers 1,3" (Format "" is hsdb's
// own dump, whose ids are hsdb layers), "speculators ids 1,3",
// "specforge ids 0,1,2, compressed" (.ckpt.gz).
func formatWords(c CaptureInfo) string {
	if c.Format == "" || c.Format == string(FormatHsdb) {
		return "hsdb layers " + joinInts(c.Layers)
	}
	s := c.Format + " ids " + joinInts(c.FormatIDs)
	if c.Compressed {
		s += ", compressed"
	}
	return s
}

// keepValidated carries over the validated sequences of a resumed
// staging directory whose files are intact (named for their input index
// within the job's input, every tensor's sha256 as recorded): it reads the
// old journal in input order (journalRecords), marks each kept index done
// and writes its record, with the merged replica checks, to a new
// temporary journal (fsynced), whose path it returns for startJournal.
// Memory: the sort's buffer and one bit per kept index.
func (w *DumpWriter) keepValidated() (string, error) {
	f, err := os.CreateTemp(w.stage, "."+JournalName+".tmp-*")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	reps := map[string]ReplicaRecord{}
	err = journalRecords(filepath.Join(w.stage, JournalName), reps, func(rec SeqRecord) error {
		if !rec.Validated || rec.Index < 0 || (w.m.Job != nil && rec.Index >= w.m.Job.Sequences) || rec.File != w.seqFileName(rec.Index) {
			return nil
		}
		if stopped(w.stop) {
			return fmt.Errorf("%w while re-reading the validated files of %s, after %d; nothing was changed", ErrInterrupted, w.stage, w.count)
		}
		var err error
		if w.plan != nil {
			err = verifyTrainerFile(filepath.Join(w.stage, filepath.FromSlash(rec.File)), w.plan.Format, rec, nil, nil, nil)
		} else {
			err = verifyFile(filepath.Join(w.stage, rec.File), rec, nil, w.dtype)
		}
		if err != nil {
			w.dropKept(rec, err)
			return nil
		}
		b, _ := json.Marshal(journalEntry{Seq: &rec})
		w.done.add(rec.Index)
		w.count++
		_, err = bw.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return "", err
	}
	if len(reps) > 0 {
		mergeReplicaInto(w.m.Replicas, reps)
		b, _ := json.Marshal(journalEntry{Replicas: reps})
		bw.Write(append(b, '\n'))
	}
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("writing %s: fsync: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	ok = true
	return f.Name(), nil
}

// removeStrays deletes what the staging directory holds besides its
// manifest, journal and the files of the input indices in listed (named
// as seqFileName names them): temporary files of an interrupted write,
// files of sequences that never validated, a SpecForge rows_ directory
// left empty. The directory is read in batches of entries, not whole.
func (w *DumpWriter) removeStrays(listed *indexSet) {
	keep := func(rel string) bool {
		if rel == ManifestName || rel == JournalName {
			return true
		}
		m := strayIndex.FindStringSubmatch(rel)
		if m == nil {
			return false
		}
		i, err := strconv.Atoi(m[1])
		return err == nil && listed.has(i) && rel == w.seqFileName(i)
	}
	eachEntry(w.stage, func(name string, dir bool) {
		if dir && specforgeDir.MatchString(name) && w.plan != nil && w.plan.Format == FormatSpecForge {
			eachEntry(filepath.Join(w.stage, name), func(sub string, _ bool) {
				if !keep(name + "/" + sub) {
					os.RemoveAll(filepath.Join(w.stage, name, sub))
				}
			})
			os.Remove(filepath.Join(w.stage, name)) // only when left empty
			return
		}
		if !keep(name) {
			os.RemoveAll(filepath.Join(w.stage, name))
		}
	})
}

// strayIndex takes the input index from a sequence file's name.
var strayIndex = regexp.MustCompile(`^(?:seq|hs|rows_[0-9]+-[0-9]+/data)_([0-9]{1,18})\.`)

// eachEntry calls f with each entry of dir, read 1024 at a time.
func eachEntry(dir string, f func(name string, isDir bool)) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	defer d.Close()
	for {
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			f(e.Name(), e.IsDir())
		}
		if err != nil || len(ents) == 0 {
			return
		}
	}
}

// keptDiffers says how the sequence rec a resume kept for input row s
// differs from it: "" when the file holds the row, else what differs (its
// id, its length, its token ids, its loss_mask), compared
// through the record's shape and sha256 of the file's ids tensor
// (input_ids; speculators' token_ids, both i64 little-endian) and
// loss_mask (hsdb's own dump: present when the row has one; SpecForge:
// always, all ones for a row without one, as writeTrainerSeq writes it).
// The whole file's sha256 equals the one the kept job validated, so a row
// differs only when the --data file was changed while the earlier run read
// it (that run then failed: "changed while the job ran") and restored
// since: its file holds the changed row, not this one.
func (w *DumpWriter) keptDiffers(rec SeqRecord, s InputSeq) string {
	if rec.ID != s.ID {
		return fmt.Sprintf("it holds id %s", QuoteFileText(rec.ID))
	}
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

// recheckKept reads in once, with the journal's kept records (in input
// order, as keepValidated wrote them) beside it, and forgets every kept
// sequence whose file no longer holds its row (keptDiffers): its index is
// no longer done, so the job captures the row again and Finish takes the
// new record (the later one of an index). It returns one line per
// forgotten sequence, naming it and why, for the job's log.
func (w *DumpWriter) recheckKept(in *Inputs) ([]string, error) {
	rows, err := in.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	jp := filepath.Join(w.stage, JournalName)
	jf, err := regfile.Open(jp)
	if err != nil {
		return nil, err
	}
	defer jf.Close()
	jr := bufio.NewReaderSize(jf, 1<<16)
	var cur *SeqRecord
	var buf []byte
	left := w.count // the kept records come first; the journal has nothing else yet
	advance := func() {
		cur = nil
		for left > 0 {
			line, ok, err := readLine(jr, buf)
			buf = line
			if err != nil || !ok {
				left = 0
				return
			}
			var e journalEntry
			if json.Unmarshal(line, &e) == nil && e.Seq != nil {
				left--
				cur = e.Seq
				return
			}
		}
	}
	advance()
	var notes []string
	for {
		i, s, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return notes, nil
		}
		if err != nil {
			return notes, err
		}
		for cur != nil && cur.Index < i {
			advance()
		}
		if cur == nil || cur.Index != i {
			continue
		}
		if why := w.keptDiffers(*cur, s); why != "" {
			w.done.del(i)
			w.count--
			notes = append(notes, fmt.Sprintf("sequence %d (id %s) in %s does not hold its input row (%s; the input was changed while an earlier run read it): captured again", i, QuoteFileText(s.ID), w.stage, why))
		}
	}
}

// maxDroppedNotes bounds the lines a resume gives kept files that failed
// their check (Dropped); the rest are counted.
const maxDroppedNotes = 8

// dropKept records that rec, validated by an earlier run, failed its check
// on resume (its file missing, truncated or changed since: err says which)
// and is captured again.
func (w *DumpWriter) dropKept(rec SeqRecord, err error) {
	w.droppedN++
	if len(w.dropped) < maxDroppedNotes {
		w.dropped = append(w.dropped, fmt.Sprintf("sequence %d (id %s), validated by an earlier run, fails its check now: %v; captured again", rec.Index, QuoteFileText(rec.ID), err))
	}
}

// Dropped returns one line per kept sequence a resume found failing its
// file's check (at most maxDroppedNotes, then a count of the rest), for
// the job's log; nil when there were none.
func (w *DumpWriter) Dropped() []string {
	out := append([]string(nil), w.dropped...)
	if n := w.droppedN - len(w.dropped); n > 0 {
		out = append(out, fmt.Sprintf("and %d more sequences whose kept files fail their check: captured again", n))
	}
	return out
}
