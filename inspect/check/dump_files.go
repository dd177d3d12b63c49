package check

import (
	"io/fs"
	"path/filepath"
	"sort"

	"hsdb/engine/regfile"
	"hsdb/inspect/capture"
)

// notPlain says what a listed sequence file (a slash path under dir) is
// when it, or a directory on its way, is there but not a plain file or
// directory: "seq_000000.safetensors is a symbolic link" (regfile.Kind of
// its Lstat mode), or "" when it is absent or plain.
func notPlain(dir, name string) string {
	rel, mode, err := capture.FirstNotPlain(dir, name)
	if err != nil || rel == "" {
		return ""
	}
	return rel + " is " + regfile.Kind(mode)
}

// unaccounted returns the entries under a dump directory that its manifest
// does not account for, as slash paths relative to dir, sorted: every
// entry that is not a directory (regular file, link, pipe, ...) other
// than manifest.json, the sequence files it lists, and journal.jsonl
// while the dump is not complete (a batch job's staging directory keeps
// its journal; a finished dump has none: capture.DumpWriter removes it).
// A directory is walked, not listed itself (SpecForge's rows_A-B/ hold
// listed files). An unreadable directory is skipped: the listed files'
// own checks say what cannot be read.
func unaccounted(dir string, listed map[string]bool, complete bool) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if listed[rel] || rel == capture.ManifestName || (rel == capture.JournalName && !complete) {
			return nil
		}
		out = append(out, rel)
		return nil
	})
	sort.Strings(out)
	return out
}
