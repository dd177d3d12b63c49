package capture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/regfile"
	"io/fs"
	"os"
	"path/filepath"
)

// JournalName is the append-only record of a batch job's staging
// directory: one JSON object per line, {"seq": SeqRecord} for each
// validated sequence or {"replicas": {...}} for the cross-rank checks of a
// batch. It is the only record of the sequences while a dump is written
// (a one-shot dump also keeps them in memory): Finish streams it into
// manifest.json in input order (writeManifestStreamed) and removes it.
const JournalName = "journal.jsonl"

type journalEntry struct {
	Seq      *SeqRecord               `json:"seq,omitempty"`
	Replicas map[string]ReplicaRecord `json:"replicas,omitempty"`
}

// startJournal writes the staging header (manifest.json without
// sequences) and puts the journal in place: kept, the temporary journal
// of the sequences a resume kept (keepValidated), renamed, or an empty
// one; then opens it for appending.
func (w *DumpWriter) startJournal(kept string) error {
	hdr := *w.m
	hdr.Sequences, hdr.Replicas = []SeqRecord{}, nil
	if err := writeManifest(w.stage, &hdr); err != nil {
		return err
	}
	p := filepath.Join(w.stage, JournalName)
	if kept != "" {
		if err := os.Rename(kept, p); err != nil {
			return fmt.Errorf("writing %s: rename: %w", p, err)
		}
		if err := syncDir(w.stage); err != nil {
			return err
		}
	} else if err := writeFileAtomic(p, nil); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", p, err)
	}
	w.journal = f
	return nil
}

// appendJournal records validated sequences and a batch's replica checks,
// then, for a batch job, fsyncs, so a kill after it returns keeps them (a
// one-shot dump's temporary staging directory is never resumed).
func (w *DumpWriter) appendJournal(recs []SeqRecord, reps map[string]ReplicaRecord) error {
	var buf bytes.Buffer
	for i := range recs {
		b, _ := json.Marshal(journalEntry{Seq: &recs[i]})
		buf.Write(append(b, '\n'))
	}
	if len(reps) > 0 {
		b, _ := json.Marshal(journalEntry{Replicas: reps})
		buf.Write(append(b, '\n'))
	}
	if _, err := w.journal.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("appending to %s: %w", w.journal.Name(), err)
	}
	if !w.resumable {
		return nil
	}
	if err := w.journal.Sync(); err != nil {
		return fmt.Errorf("fsync of %s: %w", w.journal.Name(), err)
	}
	return nil
}

func (w *DumpWriter) closeJournal() {
	if w.journal != nil {
		w.journal.Close()
		w.journal = nil
	}
}

// readJournal folds DIR/journal.jsonl, if present, into m: sequences
// appended in order (a later record of the same id replaces an earlier
// one), replica checks merged by their worst difference, streamed (the
// lines are not held), m.Sequences kept to at most limit records. A
// last line cut short by a kill is ignored.
func readJournal(dir string, m *Manifest, limit int) error {
	f, err := regfile.OpenBounded(filepath.Join(dir, JournalName), MaxManifestBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return manifestTooLarge(err)
	}
	defer f.Close()
	idx := map[string]int{}
	for i, r := range m.Sequences {
		idx[r.ID] = i
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			break
		}
		if e.Seq != nil {
			if i, ok := idx[e.Seq.ID]; ok {
				m.Sequences[i] = *e.Seq
			} else {
				if len(m.Sequences) == limit {
					return fmt.Errorf("%s with the manifest: %w", JournalName, tooManySequences(limit))
				}
				idx[e.Seq.ID] = len(m.Sequences)
				m.Sequences = append(m.Sequences, *e.Seq)
			}
		}
		if len(e.Replicas) > 0 {
			if m.Replicas == nil {
				m.Replicas = map[string]ReplicaRecord{}
			}
			mergeReplicaInto(m.Replicas, e.Replicas)
			if err := checkReplicaKeys(len(m.Replicas)); err != nil {
				return fmt.Errorf("%s with the manifest: %w", JournalName, err)
			}
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) { // a read error, or the file grew past the bound
		return manifestTooLarge(err)
	}
	return nil
}
