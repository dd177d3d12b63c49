package capture

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hsdb/engine/regfile"
	"hsdb/engine/tensor"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
)

// ManifestFormat identifies the dump layout manifest.json describes.
const ManifestFormat = "hsdb-capture-dump/1"

// ManifestName is the manifest's file name inside a dump directory.
const ManifestName = "manifest.json"

// ErrManifest marks a manifest.json that cannot be read or is not an hsdb
// dump manifest.
var ErrManifest = errors.New("invalid dump manifest")

// Manifest is a dump's manifest.json (design.md, "Dump format"): the
// model, what was captured, every sequence with its file and the sha256 of
// each tensor, the validation results and the cross-rank checks.
type Manifest struct {
	Format      string `json:"format"`       // ManifestFormat
	HsdbVersion string `json:"hsdb_version"` // Version() of the hsdb that wrote it
	Created     string `json:"created"`      // RFC 3339, UTC
	// Complete is true once every sequence is written and validated and
	// the dump was renamed into place; a staging directory's manifest
	// (a batch job in progress) has false.
	Complete bool        `json:"complete"`
	Model    ModelInfo   `json:"model"`   // the model the data came from
	Capture  CaptureInfo `json:"capture"` // what was captured, and in which layout
	// Job identifies a batch job's inputs so that a resumed job can tell
	// its own staging directory from another's (nil for REPL dumps).
	Job *JobInfo `json:"job,omitempty"`
	// Edits, when present, say the captured values were changed by the
	// debugger's edits (`set var`, `patch`) in the pass they come from.
	Edits     []string                 `json:"edits,omitempty"`
	Sequences []SeqRecord              `json:"sequences"`          // in input order
	Replicas  map[string]ReplicaRecord `json:"replicas,omitempty"` // by capture key (hidden_states.{layer}, SITE:TENSOR)
	// Validation is the dump-level result of design.md's rules.
	Validation []ValidationRecord `json:"validation,omitempty"`
	// Faults are the faults `inject` had injected while the data was
	// recorded: a rehearsal, not data to train on (absent for clean runs).
	Faults []string `json:"injected_faults,omitempty"`
	// Summary counts the sequences of a dump Finish wrote (not stored in
	// the file): a batch job's Finish returns the manifest without its
	// Sequences, which only manifest.json holds.
	Summary DumpSummary `json:"-"`
}

// DumpSummary counts a finished dump's sequences: how many, their tokens
// and the bytes their files hold as recorded (SeqRecord.Bytes: trainer
// formats; 0 for hsdb's own files).
type DumpSummary struct {
	Sequences int   // sequences in the dump
	Tokens    int64 // their tokens (sum of SeqRecord.Length)
	FileBytes int64 // sum of SeqRecord.Bytes
}

// add counts r in s: one sequence, its Length tokens and its Bytes.
func (s *DumpSummary) add(r SeqRecord) {
	s.Sequences++
	s.Tokens += int64(r.Length)
	s.FileBytes += r.Bytes
}

// ModelInfo describes the model a dump came from.
type ModelInfo struct {
	Path         string         `json:"path"`          // --model as given, or "embedded:stories260K"
	ConfigSHA256 string         `json:"config_sha256"` // sha256 of config.json's bytes (or of the config hsdb derived)
	Arch         string         `json:"arch"`          // config.json architectures[0]
	ModelType    string         `json:"model_type"`    // config.json model_type
	Dims         map[string]int `json:"dims"`          // hidden_size, num_hidden_layers, vocab_size and every named size
	WorldSize    int            `json:"world_size"`    // tensor-parallel ranks the data was captured on
	Device       string         `json:"device"`        // rank 0's device name ("cpu:0", "cuda:0")
	DType        string         `json:"dtype"`         // the model's dtype (config torch_dtype/dtype)
	// WeightDType is the dtype --dtype converted the weights to on load
	// (engine.Options.DType; absent: kept as stored); ExpertParallel is
	// --ep (routed experts whole per rank, vLLM's expert parallelism);
	// W8A8 is --w8a8 (fp8 linears on fp8 activations). Like world_size and device they change the numerics of a pass, so a
	// job is not resumed under others (otherNumerics).
	WeightDType    string `json:"weights_converted_to,omitempty"`
	ExpertParallel bool   `json:"expert_parallel,omitempty"`
	W8A8           bool   `json:"w8a8,omitempty"`
}

// CaptureInfo says what a dump holds.
type CaptureInfo struct {
	Layers []int `json:"layers"` // decoder layers, in the order captured
	// What is stream (hidden_states + residual, HF output_hidden_states[i+1]),
	// hidden_states or residual (vLLM's un-summed halves).
	What  string     `json:"what"`
	Sites []SiteInfo `json:"sites,omitempty"` // captures of other site tensors
	DType string     `json:"dtype"`           // dtype of the captured tensors in the files, as their safetensors headers name it (F32, BF16, F16); DTypeName gives the flags' name
	// HFIndex maps each hidden_states.{layer} key to its index in HF's
	// output_hidden_states (layer i → i+1) when What is stream, and to null
	// for the last layer: HF's last entry is post final norm, not the
	// layer's raw output, and no index holds that. (Not -1: in Python
	// output_hidden_states[-1] is that post-norm entry, the tensor the
	// file does not hold.) HFNote says so in words.
	HFIndex map[string]*int `json:"hf_output_hidden_states_index,omitempty"`
	HFNote  string          `json:"hf_note,omitempty"`
	// Format is the trainer layout of the files (FormatSpeculators,
	// FormatSpecForge), "" for hsdb's own; FormatIDs are the layer ids in
	// that format's convention and Mapping says what each is in every
	// convention (Plan.Lines). Compressed: SpecForge's .ckpt.gz.
	Format     string   `json:"format,omitempty"`
	FormatIDs  []int    `json:"format_layer_ids,omitempty"`
	Mapping    []string `json:"mapping,omitempty"`
	Compressed bool     `json:"compressed,omitempty"`
}

// SiteInfo is one `capture site SITE TENSOR` entry: the site path, the
// tensor name and the key it is stored under ("SITE:TENSOR").
type SiteInfo struct {
	Site   string `json:"site"`
	Tensor string `json:"tensor"`
	Key    string `json:"key"`
}

// JobInfo identifies a batch job's inputs: sha256 of the input
// description (the --ids string or the JSONL file's bytes) and the number of
// sequences.
type JobInfo struct {
	InputSHA256 string `json:"input_sha256"` // hex sha256 of the input description
	Input       string `json:"input"`        // the --data path, or "--ids"
	Sequences   int    `json:"sequences"`    // sequences the input holds
}

// SeqRecord is one sequence of a dump.
type SeqRecord struct {
	ID       string        `json:"id"`        // the input's id, or its index
	Index    int           `json:"index"`     // position in the input
	Length   int           `json:"length"`    // tokens (rows of each per-token tensor)
	File     string        `json:"file"`      // relative to the dump directory
	LossMask bool          `json:"loss_mask"` // the file holds a loss_mask [length]
	Tensors  TensorRecords `json:"tensors"`   // by tensor name in the file
	// Validated is true once the file was re-read and every check passed.
	Validated bool `json:"validated"`
	// FileSHA256 and Bytes are the whole file's digest and size (trainer
	// formats; hsdb's own files record per-tensor digests only).
	FileSHA256 string `json:"file_sha256,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
}

// TensorRecord is one tensor of a sequence file: shape, dtype
// (safetensors name, "F32") and the sha256 of its raw little-endian bytes.
type TensorRecord struct {
	Shape  []int  `json:"shape"`
	DType  string `json:"dtype"`
	SHA256 string `json:"sha256"`
}

// ReplicaRecord is the cross-rank check of one replicated captured tensor
// over a whole dump: how many ranks, the largest relative difference found
// (Gathered.MaxRankDiff) and on which rank, and whether it is within
// ReplicaTol.
type ReplicaRecord struct {
	Ranks      int     `json:"ranks"`        // ranks that held a copy
	MaxRelDiff float64 `json:"max_rel_diff"` // relative to the tensor's largest magnitude
	WorstRank  int     `json:"worst_rank"`   // the rank with MaxRelDiff (0: none differed)
	// Differing are the ranks whose copy differed from rank 0's beyond
	// ReplicaTol in some pass, ascending (absent in manifests before it).
	Differing []int `json:"differing_ranks,omitempty"`
	// Alone is the one rank whose copy differed while every other rank's
	// agreed, in every pass that differed (tp ≥ 3; absent otherwise):
	// the rank to look at, even when it is rank 0.
	Alone *int `json:"alone_rank,omitempty"`
	OK    bool `json:"ok"` // MaxRelDiff <= ReplicaTol
}

// ReplicaTol is the largest relative difference between ranks' copies of a
// replicated tensor that still counts as equal: ranks compute replicated
// tensors from identical inputs with identical kernels (NCCL's all-reduce
// leaves the same sum on every rank), so only the order of a reduction
// computing the compared moments may differ.
const ReplicaTol = 1e-6

// ValidationRecord is one rule's result as the manifest stores it.
type ValidationRecord struct {
	Rule   string `json:"rule"`             // the rule's name (Rule* constants)
	Status string `json:"status"`           // pass, FAIL, skip
	Detail string `json:"detail,omitempty"` // what was found, in words
}

// ManifestSeqRecordBytes is the most one sequence's record takes in
// manifest.json as writeManifest indents it: a record with a 64-character
// id and six tensors (EAGLE-3's three auxiliary layers and the last one,
// input_ids and loss_mask), each with its shape, dtype and 64-digit
// sha256, takes about 1.6 KiB (each tensor about 225 bytes, the rest
// about 260); a journal line (compact JSON) takes about 1 KiB.
const ManifestSeqRecordBytes = 2 << 10

// ManifestMaxSequences is a generous maximum of sequences in one dump:
// EAGLE-3 drafts are trained on a few hundred thousand conversations
// (ShareGPT and UltraChat-200K), and at 2k tokens one sequence of a
// 7168-wide model's four captured layers holds about 117 MB of bf16, so
// 1 Mi sequences would be over 100 TB of hidden states.
const ManifestMaxSequences = 1 << 20

// MaxManifestBytes bounds manifest.json and its journal where their
// sequence records are all kept (ReadManifest: check, diff, the REPL;
// both files are streamed, but the records they list are held):
// ManifestMaxSequences records of ManifestSeqRecordBytes, 2 GiB. A larger
// file is refused before it is read (regfile.ErrTooLarge, naming the
// file, its size and the bound). The capture job itself streams both
// without keeping the records (dump_stream.go) and is not bound by it.
const MaxManifestBytes = ManifestSeqRecordBytes * ManifestMaxSequences

// manifestTooLarge adds to a regfile.ErrTooLarge what the bound is made
// of; other errors are returned as they are.
func manifestTooLarge(err error) error {
	if errors.Is(err, regfile.ErrTooLarge) {
		return fmt.Errorf("%w (the bound is %d sequences of at most %d bytes each: no real dump's manifest is larger)", err, ManifestMaxSequences, ManifestSeqRecordBytes)
	}
	return err
}

// manifestMinRecordBytes is less than any sequence record hsdb writes
// takes in manifest.json or a journal line: one captured layer and
// input_ids take about 350 bytes compact (a speculators sample 440, a
// SpecForge one 690).
const manifestMinRecordBytes = 256

// maxHeldSequences is how many sequence records ReadManifest holds for a
// manifest and journal of size bytes together: ManifestMaxSequences, or
// more where the files are large enough to hold more real records
// (size / manifestMinRecordBytes). A record of "{}" takes 3 bytes of the
// file and about 95 of memory, so the 2 GiB MaxManifestBytes alone let a
// manifest of them hold some 68 GB; now the records take less memory
// than the files. What each holds is bounded too: a tensors entry takes
// at most about twice its bytes (TensorRecords refuses entries too small
// to be hsdb's, which took 10-14 times theirs).
func maxHeldSequences(size int64) int {
	return int(max(ManifestMaxSequences, size/manifestMinRecordBytes))
}

// tooManySequences refuses more records than maxHeldSequences.
func tooManySequences(limit int) error {
	return fmt.Errorf("more than %d sequences (at most %d, or one per %d bytes of manifest and journal: no real record is smaller)", limit, ManifestMaxSequences, manifestMinRecordBytes)
}

// ReadManifest reads DIR/manifest.json and, for a batch job's staging
// directory, folds in its journal (JournalName) of the sequences validated
// so far. Both are streamed (manifest.json through streamManifest, as the
// capture job reads it, the journal a line at a time): memory holds the
// records, not the files' bytes too, and at most maxHeldSequences of them.
// Errors: the file's (os.ErrNotExist when absent; one over
// MaxManifestBytes, the manifest or its journal, is refused unread with
// regfile.ErrTooLarge naming it, its size and the bound) or ErrManifest
// for bad JSON (a value of the wrong JSON type named by its field), another
// format, an unreadable journal, a sequence file name leaving the dump, a
// negative sequence length or index or job count, two sequences with
// one id or one file, or a capture.dtype, capture.what or capture.format
// hsdb does not write (checkManifestCapture).
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	f, err := regfile.OpenBounded(p, MaxManifestBytes)
	if err != nil {
		return nil, manifestTooLarge(err)
	}
	defer f.Close()
	var size int64 // of the manifest and journal, for maxHeldSequences
	for _, name := range []string{ManifestName, JournalName} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			size += st.Size()
		}
	}
	limit := maxHeldSequences(size)
	var m Manifest
	var seqs []SeqRecord
	err = streamManifest(bufio.NewReaderSize(f, 1<<16), &m, func(r SeqRecord) error {
		if len(seqs) == limit {
			return fmt.Errorf("%w: %w", ErrManifest, tooManySequences(limit))
		}
		seqs = append(seqs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, manifestTooLarge(err))
	}
	m.Sequences = seqs
	if err := checkReplicaKeys(len(m.Replicas)); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", p, ErrManifest, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("%s: %w: format %s, want %q", p, ErrManifest, QuoteFileText(m.Format), ManifestFormat)
	}
	if err := readJournal(dir, &m, limit); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", dir, ErrManifest, err)
	}
	if err := checkManifestSizes(&m); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", p, ErrManifest, err)
	}
	if err := checkManifestCapture(&m.Capture); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", p, ErrManifest, err)
	}
	if m.Job != nil && m.Job.Sequences < 0 {
		return nil, fmt.Errorf("%s: %w: job.sequences is %d, want a count (>= 0)", p, ErrManifest, m.Job.Sequences)
	}
	firstOf := make(map[string]int, len(m.Sequences)) // id -> first sequence with it
	fileOf := make(map[string]int, len(m.Sequences))  // file -> first sequence listing it
	for i, r := range m.Sequences {
		if err := CheckSeqFileName(r.File); err != nil {
			return nil, fmt.Errorf("%s: %w: sequences[%d].file: %v", p, ErrManifest, i, err)
		}
		if r.Length < 0 || r.Index < 0 {
			f, v := "length", r.Length
			if r.Index < 0 {
				f, v = "index", r.Index
			}
			return nil, fmt.Errorf("%s: %w: sequences[%d].%s is %d, want >= 0", p, ErrManifest, i, f, v)
		}
		if j, dup := firstOf[r.ID]; dup {
			// A trainer joining samples on id would pair one sequence's
			// hidden states with the other's; hsdb never writes two.
			return nil, fmt.Errorf("%s: %w: sequences[%d] and sequences[%d] both have id %s", p, ErrManifest, j, i, QuoteFileText(r.ID))
		}
		firstOf[r.ID] = i
		if j, dup := fileOf[r.File]; dup {
			return nil, fmt.Errorf("%s: %w: sequences[%d] and sequences[%d] both list file %s (one file per sequence)", p, ErrManifest, j, i, QuoteFileText(r.File))
		}
		fileOf[r.File] = i
	}
	return &m, nil
}

// CheckSeqFileName says why name cannot be a file a manifest lists: a
// dump is flat, so a sequence's file is a plain name inside the dump
// directory — not empty, not "." or "..", no path separator, not absolute
// — except SpecForge's one level of grouping, exactly
// rows_{g}-{g+2000}/data_{idx}.ckpt[.gz] (specforgeFile). Readers (check,
// resume) never open a path that leaves the dump, as the writer never
// writes one.
func CheckSeqFileName(name string) error {
	if specforgeFile.MatchString(name) {
		return nil
	}
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") || !filepath.IsLocal(name) {
		return fmt.Errorf("%s is not a file name inside the dump directory (a path leaving it is refused)", QuoteFileText(name))
	}
	return nil
}

// CheckSeqPath says why dir/name (a name CheckSeqFileName allows) must not
// be opened: a component that is not there, a symbolic link or not a
// regular file (its directory, for SpecForge's rows_ grouping, not a real
// directory) — so reads stay inside the dump.
func CheckSeqPath(dir, name string) error {
	rel, mode, err := FirstNotPlain(dir, name)
	if err != nil || rel == "" {
		return err
	}
	return fmt.Errorf("%s is a %s, not a plain %s inside the dump", filepath.Join(dir, rel), mode.Type(), map[bool]string{true: "file", false: "directory"}[rel == name])
}

// FirstNotPlain walks dir/name (a slash path) one component at a time
// without following links (Lstat) and returns the first component that is
// not what the path needs there, a plain directory on the way or a plain
// file at the end: its slash path relative to dir and its mode; "" when
// every component is plain. err is the Lstat error of a component that is
// not there.
func FirstNotPlain(dir, name string) (rel string, mode os.FileMode, err error) {
	p := dir
	parts := strings.Split(name, "/")
	for i, c := range parts {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", 0, err
		}
		if last := i == len(parts)-1; (last && !fi.Mode().IsRegular()) || (!last && !fi.IsDir()) {
			return strings.Join(parts[:i+1], "/"), fi.Mode(), nil
		}
	}
	return "", 0, nil
}

// specforgeFile is the one nested name a manifest may list: SpecForge's
// rows_{g}-{g+2000}/data_{idx}.ckpt or .ckpt.gz (trainerFile).
var specforgeFile = regexp.MustCompile(`^rows_[0-9]+-[0-9]+/data_[0-9]+\.ckpt(\.gz)?$`)

// writeManifest writes m to DIR/manifest.json atomically (temporary file,
// fsync, rename, fsync of the directory).
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ManifestName), append(b, '\n'))
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory: write, fsync, rename, fsync the directory.
func writeFileAtomic(path string, data []byte) error {
	if err := writeFileSynced(path, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeFileSynced is writeFileAtomic without the directory's fsync: the
// file's bytes are durable when it returns, its name once the caller
// fsyncs the directory (the capture job does so once per batch, before the
// journal records the batch's files).
func writeFileSynced(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("writing %s: fsync: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: rename: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	return nil
}

// Version returns hsdb's version as the Go build records it: the main
// module's version, with the VCS revision when the build has one.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v
}

// DTypeName is the name hsdb's flags and output give the dtype of a
// capture's files (CaptureInfo.DType, a safetensors name: BF16 -> bf16,
// F32 -> f32, tensor.DType.String), for what a user reads: capture's
// text and --json, a resume's refusal. A name ParseDType does not take
// is returned as it is.
func (c CaptureInfo) DTypeName() string {
	dt, err := tensor.ParseDType(c.DType)
	if err != nil {
		return c.DType
	}
	return dt.String()
}
