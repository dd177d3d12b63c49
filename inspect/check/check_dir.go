package check

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"hsdb/engine/tensor"
	"hsdb/inspect/capture"
)

// PathReport is check's verdict on a file or a directory: an hsdb dump
// (manifest.json), or a directory of capture files from any tool.
type PathReport struct {
	Path string
	// Manifest is the dump's manifest, nil for other directories and files.
	Manifest *capture.Manifest
	// Rules are the directory-level rules (an hsdb dump: complete, every
	// listed file present and none unlisted, the sequence count).
	Rules []RuleResult
	Files []*Report
	// Err is set when the path itself cannot be read (missing, empty
	// directory, bad manifest).
	Err error
}

// Failed reports whether anything failed or could not be read.
func (p *PathReport) Failed() bool {
	if p.Err != nil {
		return true
	}
	for _, r := range p.Rules {
		if r.Status == capture.Fail {
			return true
		}
	}
	for _, f := range p.Files {
		if f.Failed() {
			return true
		}
	}
	return false
}

// Unreadable reports whether the input could not be read at all: the path
// or manifest failed, or every file was unreadable (check exits 2).
func (p *PathReport) Unreadable() bool {
	if p.Err != nil {
		return true
	}
	if len(p.Files) == 0 {
		return false
	}
	for _, f := range p.Files {
		if f.Err == nil {
			return false
		}
	}
	return true
}

// Lines renders the report: each file's, then the directory rules, a
// summary line and the path's verdict (dirLines).
func (p *PathReport) Lines() []string {
	var out []string
	if p.Err != nil {
		return []string{p.Path + ": cannot read: " + p.Err.Error()}
	}
	for _, f := range p.Files {
		out = append(out, f.Lines()...)
	}
	return append(out, p.dirLines()...)
}

// dirLines renders what a path of several files (or a dump) adds to its
// files' reports, as check and diff both print it: the manifest's header,
// the directory rules, a count of the files per outcome and the path's
// verdict (Verdict: the worst of the files' and the rules', which is the
// exit code), so that a failing directory rule is never left off, nor read
// as a pass below files that are each valid. None for a lone file.
func (p *PathReport) dirLines() []string {
	var out []string
	// The dtype as dump and capture print it (bf16), not as the
	// manifest records it in safetensors' names (BF16).
	if p.Manifest != nil || len(p.Files) > 1 {
		out = append(out, p.Path+":")
		if m := p.Manifest; m != nil {
			if m.Capture.Format != "" {
				out = append(out, fmt.Sprintf("  %s samples by hsdb of %s (%s, tp %d): %s ids %s = %s, %s, %d sequence%s", m.Capture.Format, m.Model.Path, m.Model.Arch,
					m.Model.WorldSize, m.Capture.Format, joinInts(m.Capture.FormatIDs), m.Capture.Sources(), m.Capture.DTypeName(), len(m.Sequences), plural(len(m.Sequences))))
			} else {
				out = append(out, fmt.Sprintf("  hsdb dump of %s (%s, tp %d): layers %s (%s), %s, %d sequence%s", m.Model.Path, m.Model.Arch,
					m.Model.WorldSize, joinInts(m.Capture.Layers), m.Capture.What, m.Capture.DTypeName(), len(m.Sequences), plural(len(m.Sequences))))
			}
			if len(m.Faults) > 0 {
				out = append(out, "  written under INJECTED FAULTS (a rehearsal, not training data): "+strings.Join(m.Faults, "; "))
			}
		}
		for _, x := range p.Rules {
			out = append(out, strings.TrimRight(fmt.Sprintf("  %-4s  %-*s  %s", x.Status, capture.RuleWidth, x.Rule, x.Detail), " "))
		}
		bad, unread, uncompared := 0, 0, 0
		for _, f := range p.Files {
			switch {
			case f.Err != nil:
				unread++
			case f.Failed():
				bad++
			case f.Verdict() == VerdictUnreadable: // read, but nothing could be compared
				uncompared++
			}
		}
		line := fmt.Sprintf("  %d file%s: %d valid, %d invalid, %d unreadable", len(p.Files), plural(len(p.Files)), len(p.Files)-bad-unread-uncompared, bad, unread)
		if uncompared > 0 {
			line += fmt.Sprintf(", %d not compared", uncompared)
		}
		out = append(out, line, "  verdict: "+p.Verdict().String())
	}
	return out
}

// captureExts are the file names a directory check reads.
var captureExts = []string{".safetensors", ".pt", ".pth", ".bin", ".ckpt", ".ckpt.gz"}

// captureFiles lists the capture files under dir, recursively (SpecForge
// puts samples in rows_{g}-{g+2000}/), as slash-separated paths relative to
// dir, sorted.
func captureFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && hasCaptureExt(d.Name()) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// CheckPath checks a capture file, or every capture file of a directory
// and its subdirectories (*.safetensors, *.pt, *.pth, *.bin, *.ckpt,
// *.ckpt.gz, sorted by path). A directory with
// manifest.json is checked as an hsdb dump: the manifest supplies the
// requested layers, what they claim, the dtype, the cross-rank checks and
// each tensor's sha256 (unless opts sets them), and the directory rules
// check that it is complete, that every file it lists exists and that no
// other file is there (unaccounted).
func CheckPath(path string, opts CheckOptions) *PathReport {
	p := &PathReport{Path: path}
	st, err := os.Stat(path)
	if err != nil {
		p.Err = fmt.Errorf("%w: %w", ErrUnreadable, err)
		return p
	}
	if !st.IsDir() {
		p.Files = []*Report{CheckFile(path, opts)}
		return p
	}
	m, err := capture.ReadManifest(path)
	switch {
	case err == nil:
		p.Manifest = m
		checkDump(p, m, opts)
		return p
	case !errors.Is(err, fs.ErrNotExist):
		p.Err = err
		return p
	}
	names, err := captureFiles(path)
	if err != nil {
		p.Err = fmt.Errorf("%w: %w", ErrUnreadable, err)
		return p
	}
	if len(names) == 0 {
		p.Err = fmt.Errorf("%w: %s holds no capture files (%s)", ErrUnreadable, path, strings.Join(captureExts, ", "))
		return p
	}
	for _, n := range names {
		p.Files = append(p.Files, CheckFile(filepath.Join(path, filepath.FromSlash(n)), opts))
	}
	dirMaskRule(p)
	return p
}

// dirMaskRule judges the loss_mask's alignment over every file of a
// directory together when no file has the two spans it takes alone (one
// answer per file: the usual single-turn data).
func dirMaskRule(p *PathReport) {
	var all []spanCtx
	for _, f := range p.Files {
		if x, ok := f.Rule(capture.RuleLossMask); ok && x.Status != capture.Skip {
			return // judged per file
		}
		all = append(all, f.maskCtx...)
	}
	if len(all) < 2 {
		return
	}
	r, d := maskShiftRule(all, fmt.Sprintf(" over %d files", len(p.Files)))
	if r.Status == capture.Skip {
		return
	}
	if d != nil {
		r.Detail += "; " + d.Cause
	}
	p.Rules = append(p.Rules, r)
}

func hasCaptureExt(name string) bool {
	for _, e := range captureExts {
		if strings.HasSuffix(name, e) {
			return true
		}
	}
	return false
}

// checkDump checks an hsdb dump directory against its manifest.
func checkDump(p *PathReport, m *capture.Manifest, opts CheckOptions) {
	add := func(rule string, st capture.Status, format string, a ...any) {
		p.Rules = append(p.Rules, RuleResult{Rule: rule, Status: st, Detail: fmt.Sprintf(format, a...)})
	}
	if len(m.Faults) > 0 {
		add(capture.RuleNotInjected, capture.Fail, "recorded under `inject`: %s (a rehearsal of a bug, not data to train on)", strings.Join(m.Faults, "; "))
	}
	if d := opts.Dims; d != nil {
		// The model the dump was written from, against --model's: another
		// model makes every file's comparison meaningless.
		mm := m.Model
		was := fmt.Sprintf("%s (hidden_size %d, %d layers, vocab_size %d)", mm.Arch, mm.Dims["hidden_size"], mm.Dims["num_hidden_layers"], mm.Dims["vocab_size"])
		is := fmt.Sprintf("%s (hidden_size %d, %d layers, vocab_size %d)", d.Arch, d.Hidden, d.Layers, d.Vocab)
		switch {
		case mm.Arch == "":
		case was != is:
			add(capture.RuleModel, capture.Fail, "the dump was written from %s, --model is %s: its files are compared with another model (the manifest names %s)", was, is, mm.Path)
		case mm.ConfigSHA256 != "" && opts.ConfigSHA256 != "" && mm.ConfigSHA256 != opts.ConfigSHA256:
			// The same sizes from another config.json: another checkpoint
			// of the same shape (a bf16 conversion of an fp8 one, a
			// fine-tune), or this one's config edited since. Said, so that
			// files departing from --model's values are read with it.
			add(capture.RuleModel, capture.Pass, "the dump was written from %s, as --model, but from another config.json (the manifest's sha256 %.12s…, --model's %.12s…; the manifest names %s): if the files depart from --model's values, check them with the model they were written from",
				was, mm.ConfigSHA256, opts.ConfigSHA256, mm.Path)
		default:
			add(capture.RuleModel, capture.Pass, "the dump was written from %s, as --model", was)
		}
	}
	if opts.Model != nil && m.Model.W8A8 != opts.ModelW8A8 {
		// Not the files' fault: their values and hsdb's pass here differ
		// by fp8's rounding of every fp8 linear's input.
		was, is := "with --w8a8 (the fp8 linears on fp8 activations)", "without --w8a8 (the fp8 weights widened, activations unquantized)"
		if !m.Model.W8A8 {
			was, is = is, was
		}
		add(capture.RuleModel, capture.Pass, "the dump was written %s and hsdb's forward pass here runs %s: departures of fp8's rounding (e4m3 keeps 3 mantissa bits) are these numerics, not the capture's fault; compare like with like (--w8a8 needs --device cuda)", was, is)
	}
	if m.Complete {
		add(capture.RuleComplete, capture.Pass, "the manifest marks the dump complete")
	} else {
		add(capture.RuleComplete, capture.Fail, "the manifest is not marked complete (an interrupted batch job's staging directory?)")
	}
	if s := formatIDsClash(m.Capture); s != "" {
		add(capture.RuleLayerCount, capture.Fail, "%s", s)
	}
	if s := layersLost(m.Capture); s != "" {
		add(capture.RuleLayerCount, capture.Fail, "%s", s)
	}
	opts.ManifestLayers = m.Capture.Layers
	if opts.Layers == nil {
		opts.Layers = m.Capture.Layers
	} else if len(m.Capture.Layers) > 0 && !sameLayers(opts.Layers, m.Capture.Layers, m.Capture.Format == string(capture.FormatSpecForge)) {
		// The manifest knows what hsdb captured: a --layers that differs
		// is said here once, where a SpecForge sample (no labels of its
		// own, labelled from --layers) would show only values that depart
		// from the layers asked, as if the file were off by a layer.
		add(capture.RuleLayerCount, capture.Fail, "--layers %s, but the manifest records hsdb layers %s%s: --layers %s checks what the files hold",
			joinInts(opts.Layers), joinInts(m.Capture.Layers), formatIDsText(m.Capture), joinInts(m.Capture.Layers))
	}
	if opts.What == "" {
		opts.What = m.Capture.What
	}
	if opts.DType == tensor.Invalid {
		opts.DType, _ = tensor.FromSafetensors(m.Capture.DType)
	}
	opts.DumpWorld = m.Model.WorldSize
	opts.DumpHidden = m.Model.Dims["hidden_size"]
	opts.DumpLayers = m.Model.Dims["num_hidden_layers"]
	if len(m.Replicas) > 0 {
		worst := capture.ReplicaRecord{OK: true}
		opts.ReplicasFailed = nil
		// In key order, so that ties pick the same record every time; a
		// failing record is the worst before any that passed.
		for _, k := range slices.Sorted(maps.Keys(m.Replicas)) {
			r := m.Replicas[k]
			worst.Ranks = r.Ranks
			if !r.OK {
				opts.ReplicasFailed = append(opts.ReplicasFailed, k)
			}
			if (!r.OK && worst.OK) || (r.OK == worst.OK && r.MaxRelDiff > worst.MaxRelDiff) {
				worst.MaxRelDiff, worst.WorstRank = r.MaxRelDiff, r.WorstRank
				worst.Differing, worst.Alone = r.Differing, r.Alone
				opts.ReplicasWorst = k
			}
			worst.OK = worst.OK && r.OK
		}
		opts.Replicas = &worst
	}
	listed := map[string]bool{}
	var missing, other []string
	for _, rec := range m.Sequences {
		listed[rec.File] = true
		fp := filepath.Join(p.Path, filepath.FromSlash(rec.File))
		if err := capture.CheckSeqPath(p.Path, rec.File); err != nil {
			// Not there, or a link or device: reads stay inside the dump.
			if what := notPlain(p.Path, rec.File); what != "" {
				other = append(other, what)
			} else {
				missing = append(missing, rec.File)
			}
			continue
		}
		o := opts
		if o.SeqLens == nil && rec.Length > 0 {
			o.SeqLens = []int{rec.Length} // an hsdb dump holds one sequence per file
			o.SeqLensFrom = "the dump's manifest"
		}
		o.Expected = rec.Tensors
		p.Files = append(p.Files, CheckFile(fp, o))
	}
	dirMaskRule(p)
	extra := unaccounted(p.Path, listed, m.Complete)
	switch {
	case len(missing) > 0 || len(other) > 0:
		var d []string
		if len(missing) > 0 {
			d = append(d, "listed but missing: "+strings.Join(missing, ", "))
		}
		if len(other) > 0 {
			d = append(d, "listed but not a plain file: "+strings.Join(other, ", "))
		}
		add(capture.RuleFiles, capture.Fail, "%s", strings.Join(d, "; "))
	case len(extra) > 0:
		add(capture.RuleFiles, capture.Fail, "not in the manifest: %s", strings.Join(extra, ", "))
	default:
		add(capture.RuleFiles, capture.Pass, "%d file%s, as the manifest lists", len(m.Sequences), plural(len(m.Sequences)))
	}
	if j := m.Job; j != nil {
		if len(m.Sequences) == j.Sequences {
			add(capture.RuleSeqCount, capture.Pass, "%d sequence%s, as the job's input", j.Sequences, plural(j.Sequences))
		} else {
			add(capture.RuleSeqCount, capture.Fail, "%d sequence%s, the job's input has %d", len(m.Sequences), plural(len(m.Sequences)), j.Sequences)
		}
	}
}

// formatIDsText names a trainer-format dump's layer ids in its own
// convention (" (specforge ids 0,1,2)"), "" for hsdb's own format.
func formatIDsText(c capture.CaptureInfo) string {
	if c.Format == "" || len(c.FormatIDs) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s ids %s)", c.Format, joinInts(c.FormatIDs))
}

// sameLayers says whether the --layers asked equal the layers a manifest
// records: in order for SpecForge samples, whose aux layers are labelled
// from --layers by position, in any order for files that label their
// entries (as the layer-count rule takes them).
func sameLayers(asked, recorded []int, ordered bool) bool {
	if ordered {
		return slices.Equal(asked, recorded)
	}
	return slices.Equal(slices.Sorted(slices.Values(asked)), slices.Sorted(slices.Values(recorded)))
}
