package capture

import (
	"fmt"

	"hsdb/inspect/plural"
)

// existsError is outFree's refusal of a dump hsdb wrote, without --force:
// it says what dir holds (dumpHolds) and the ways on: --force, another
// directory, or, for a dump a `hsdb capture` job wrote, that job again
// (the same command verifies a finished dump and reports it complete, as
// completeJob does, and resumes its DIR.partial).
func existsError(dir string) error {
	holds, job := dumpHolds(dir)
	on := "give --force to replace it, or write to another directory"
	if job {
		on = "give --force to replace it, write to another directory, or rerun the `hsdb capture` command that wrote it: the same job verifies a finished dump and reports it complete, and resumes an unfinished one"
	}
	return fmt.Errorf("dump %s: %w: it holds %s; %s", dir, ErrExists, holds, on)
}

// dumpHolds describes the dump in dir from its manifest: its format, how
// many sequences (samples, for the trainers' formats) of which layers and
// kind, of which model at which tp, and who wrote it (job: a `hsdb
// capture` job, whose manifest records its input; else the debugger's
// `dump`). A manifest that cannot be read is said so.
func dumpHolds(dir string) (desc string, job bool) {
	m, err := ReadManifest(dir)
	if err != nil {
		return fmt.Sprintf("an hsdb dump whose manifest cannot be read (%v)", err), false
	}
	format, unit := FormatHsdb, "sequence"
	if m.Capture.Format != "" && Format(m.Capture.Format) != FormatHsdb {
		format, unit = Format(FileText(m.Capture.Format)), "sample"
	}
	what := m.Capture.What
	if what == "" {
		what = WhatStream
	}
	desc = fmt.Sprintf("an hsdb dump in %s format: %s of %s (%s) of model %s at tp %d", format, plural.N(len(m.Sequences), unit), FileText(m.Capture.Sources()), FileText(string(what)), FileText(m.Model.Path), m.Model.WorldSize)
	if m.Job != nil {
		state := "finished"
		if !m.Complete {
			state = "not marked complete"
		}
		return desc + fmt.Sprintf(", written by an `hsdb capture` job on %s (%s)", FileText(m.Job.Input), state), true
	}
	return desc + ", written by the debugger's `dump`", false
}
