package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"hsdb/engine"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/tensor"
	"hsdb/engine/worker"
	"hsdb/inspect/client"
	"hsdb/inspect/plural"
)

// modelFlags holds the shared flags (flagTable) a subcommand registered.
type modelFlags struct {
	model     string
	tp        int
	device    string
	dtype     string
	ep        bool
	w8a8      bool
	moe       string
	loadRange string // --load-layers A-B
	layers    string // --layers 2,30,58,60: the captured (or expected) layers
	json      bool
	noModel   bool
	set       map[string]bool // flags given on the command line (after parse)
	// rank workers (engine/worker)
	workers       setBool
	listen        string
	pp            int
	workerTimeout time.Duration
	workerBin     string
	workerLinks   string
}

// flagDef is one entry of the shared flag table: a flag with the same
// name, type, default and meaning in every subcommand that takes it.
type flagDef struct {
	name, usage string
	bind        func(fs *flag.FlagSet, m *modelFlags, name, usage string)
}

func strFlag(field func(*modelFlags) *string, def string) func(*flag.FlagSet, *modelFlags, string, string) {
	return func(fs *flag.FlagSet, m *modelFlags, name, usage string) { fs.StringVar(field(m), name, def, usage) }
}

// setBool is a boolean flag that remembers whether it was given (--workers:
// --workers=false is not the same as leaving it out).
type setBool struct{ v, set bool }

func (b *setBool) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(b.v)
}

func (b *setBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	b.v, b.set = v, true
	return nil
}

// IsBoolFlag lets it be given without a value.
func (b *setBool) IsBoolFlag() bool { return true }

func boolFlag(field func(*modelFlags) *bool) func(*flag.FlagSet, *modelFlags, string, string) {
	return func(fs *flag.FlagSet, m *modelFlags, name, usage string) { fs.BoolVar(field(m), name, false, usage) }
}

// flagTable is the one table of the flags several subcommands share
// (hsdb, generate, plan, capture, check, diff): each subcommand registers
// the groups it takes (modelGroup and the names it lists), never its own
// variant, so that a flag means the same everywhere. --layers is always
// a list of decoder layers captured or expected; the range of layers to
// load is --load-layers. The help text here is what most commands say;
// flagUsageFor words it for a command that uses the flag otherwise (plan
// loads nothing, check can run without a model).
var flagTable = []flagDef{
	{"model", "model: an HF directory (config.json + safetensors), a llama2.c .bin, \"embedded\" or empty for the embedded stories260K", strFlag(func(m *modelFlags) *string { return &m.model }, "")},
	{"tp", "tensor-parallel world size (ranks) the model runs at",
		func(fs *flag.FlagSet, m *modelFlags, name, usage string) { fs.IntVar(&m.tp, name, 1, usage) }},
	{"device", "cpu or cuda (default: cuda where hsdb-cuda-worker is installed next to hsdb or on PATH and sees a GPU, one worker process per rank; else cpu)", strFlag(func(m *modelFlags) *string { return &m.device }, "")},
	{"dtype", "convert weights on load: f32, bf16 or f16 (default: as stored); quantized weights (fp8, int4) stay quantized on cuda and are dequantized to it on cpu", strFlag(func(m *modelFlags) *string { return &m.dtype }, "")},
	{"ep", "MoE models: whole experts per rank (expert parallel, over the --tp ranks) instead of splitting each expert", boolFlag(func(m *modelFlags) *bool { return &m.ep })},
	{"w8a8", "fp8 checkpoints on cuda: run the block-scaled fp8 linears as fp8 GEMMs on activations quantized per token and 128 columns (activation_scheme dynamic, as DeepSeek's inference code, vLLM and SGLang do) instead of widening the weights to bf16 (the default, equal to the CPU's dequantized weights); the routed experts' inputs are rounded through the same fp8 quantization", boolFlag(func(m *modelFlags) *bool { return &m.w8a8 })},
	{"moe", "MoE expert split: tp (each expert's intermediate split over ranks, vLLM's default; the default) or ep (same as --ep)", strFlag(func(m *modelFlags) *string { return &m.moe }, "")},
	{"load-layers", "load only decoder layers A-B (with embeddings, final norm and head), e.g. 58-60", strFlag(func(m *modelFlags) *string { return &m.loadRange }, "")},
	{"layers", "decoder layers a capture holds, e.g. 2,30,58,60", strFlag(func(m *modelFlags) *string { return &m.layers }, "")},
	{"json", "print the result as one JSON object; a failure: one object with command, error and exit", boolFlag(func(m *modelFlags) *bool { return &m.json })},
	{"no-model", "do not run the model: structure, rules and shape forensics only; --tp, --ep and --moe still apply, and the flags of how the model runs, as --w8a8, --dtype, --device or the workers', are refused with it", boolFlag(func(m *modelFlags) *bool { return &m.noModel })},
	{"workers", "run each rank in its own worker process (hsdb worker; hsdb-cuda-worker for --device cuda, where it is the default), so that a failing rank never ends the session; --workers=false runs CUDA ranks in process (a -tags cuda build)", func(fs *flag.FlagSet, m *modelFlags, name, usage string) { fs.Var(&m.workers, name, usage) }},
	{"listen", "run the ranks in workers that join at this address (hsdb worker --connect ADDR --token T, started by a launcher: ssh, srun, a Kubernetes job); prints the token",
		strFlag(func(m *modelFlags) *string { return &m.listen }, "")},
	{"pp", "pipeline stages (with --workers or --listen): the decoder layers split into N stages as vLLM splits them, each a --tp group of workers",
		func(fs *flag.FlagSet, m *modelFlags, name, usage string) { fs.IntVar(&m.pp, name, 1, usage) }},
	{"worker-timeout", "with workers: how long a worker may go without a message (computing, or in a collective) before it is declared hung and killed",
		func(fs *flag.FlagSet, m *modelFlags, name, usage string) {
			fs.DurationVar(&m.workerTimeout, name, 10*time.Minute, usage)
		}},
	{"worker-links", "with workers: direct (each worker links to its peers: collectives and stage transfers go worker to worker) or hub (they go through the front: for hosts whose workers can reach only the front)",
		strFlag(func(m *modelFlags) *string { return &m.workerLinks }, "direct")},
	{"worker-bin", "the binary the workers run as BIN worker (default: this hsdb; for --device cuda the installed hsdb-cuda-worker)", strFlag(func(m *modelFlags) *string { return &m.workerBin }, "")},
}

// modelGroup names the flags of every subcommand that loads a model.
var modelGroup = []string{"model", "tp", "device", "dtype", "ep", "w8a8", "moe", "load-layers", "workers", "listen", "pp", "worker-timeout", "worker-links", "worker-bin"}

// runOnly names the model group's flags that say only how the forward
// pass runs (numerics, device, which layers load, the rank workers): with
// --no-model (check: no forward pass) none of them can apply. --tp stays:
// it is the world size the capture ran at, for shard forensics, and --ep
// and --moe with it decide which --tp the model can be split over.
var runOnly = []string{"dtype", "w8a8", "device", "load-layers", "pp", "workers", "listen", "worker-timeout", "worker-links", "worker-bin"}

// noModelClash refuses, with --no-model, a runOnly flag given on the
// command line (m.set), which would otherwise be taken and ignored: the
// two contradict each other, as --ep and --moe tp do (a usage error).
func (m *modelFlags) noModelClash() error {
	if !m.noModel {
		return nil
	}
	var given []string
	for _, n := range runOnly {
		if m.set[n] {
			given = append(given, "--"+n)
		}
	}
	switch len(given) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s and --no-model contradict each other: --no-model runs no forward pass, and %s says only how it runs; leave one out", given[0], given[0])
	}
	return fmt.Errorf("%s and --no-model contradict each other: --no-model runs no forward pass, and %s say only how it runs; leave them or --no-model out", strings.Join(given, ", "), strings.Join(given, ", "))
}

// register adds the model group and the other named shared flags to fs.
// A subcommand that loads a model but has no capture list (hsdb,
// generate) gets a --layers that refuses with the hint to --load-layers
// (the spelling it had before).
func (m *modelFlags) register(fs *flag.FlagSet, names ...string) {
	m.registerExcept(fs, nil, names...)
}

// workerGroup names the model group's flags about rank worker processes,
// which `hsdb plan` (it starts no worker) does not take.
var workerGroup = []string{"workers", "listen", "worker-timeout", "worker-links", "worker-bin"}

// registerExcept is register without the flags named in except: a
// subcommand refuses them as unknown rather than take and ignore them.
func (m *modelFlags) registerExcept(fs *flag.FlagSet, except []string, names ...string) {
	want := map[string]bool{}
	for _, n := range append(append([]string{}, modelGroup...), names...) {
		want[n] = true
	}
	for _, n := range except {
		delete(want, n)
	}
	for _, d := range flagTable {
		if want[d.name] {
			d.bind(fs, m, d.name, flagUsage(fs.Name(), d))
		}
	}
	if !want["layers"] {
		fs.Func("layers", hiddenUsage, func(v string) error {
			return fmt.Errorf("--layers names the layers a capture holds (capture, check, diff); to load only decoder layers %s use --load-layers %s", v, v)
		})
	}
}

// hiddenUsage marks a flag that help listings leave out.
const hiddenUsage = "(hidden)"

// parsed records which flags the command line gave (for defaults that
// differ by subcommand, as check's --tp).
func (m *modelFlags) parsed(fs *flag.FlagSet) {
	m.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { m.set[f.Name] = true })
}

func (m *modelFlags) options() (engine.Options, error) {
	o := engine.Options{TP: m.tp, Device: m.device, W8A8: m.w8a8}
	if m.device != "" && m.device != "cpu" && m.device != "cuda" { // "": chosen by chooseDevice
		return o, fmt.Errorf("--device %q: want cpu or cuda", m.device)
	}
	if m.tp < 1 {
		return o, fmt.Errorf("--tp %d: the world size must be at least 1", m.tp)
	}
	if m.w8a8 && m.device == "cpu" {
		return o, fmt.Errorf("--w8a8 and --device cpu contradict each other: the CPU backend dequantizes fp8 weights on load; --w8a8 needs --device cuda")
	}
	switch m.moe {
	case "", "tp": // "": not given, tp
		if m.ep && m.moe == "tp" {
			return o, fmt.Errorf("--ep and --moe tp contradict each other: --ep is --moe ep (whole experts per rank); give one")
		}
		o.EP = m.ep
	case "ep":
		o.EP = true
	default:
		return o, fmt.Errorf("--moe %q: want tp or ep", m.moe)
	}
	if m.loadRange != "" {
		lr, err := model.ParseLayerRange(m.loadRange)
		if err != nil {
			return o, fmt.Errorf("--load-layers %q: want A-B or A, decoder layer indices from 0 with A <= B", m.loadRange)
		}
		o.Layers = &lr
	}
	if m.dtype != "" {
		// One message for a name that is no dtype at all and for one the
		// weights cannot be kept in (ParseDType's own list names i64, bool).
		dt, err := tensor.ParseFloatDType(m.dtype)
		if err != nil {
			return o, fmt.Errorf("--dtype %q: weights can be kept as %s", m.dtype, tensor.FloatDTypeNames)
		}
		o.DType = dt
	}
	return o, nil
}

// validate checks every model-group and worker flag value (options,
// validateWorkers) before anything loads, so that a command refuses a bad
// value as a bad flag (exit 2), as plan, check and diff do.
func (m *modelFlags) validate() error {
	if _, err := m.options(); err != nil {
		return err
	}
	return m.validateWorkers()
}

// validateModelPath refuses a --model that names nothing on disk or
// something no loader takes (modelpath.Resolve: "--model PATH: stat PATH:
// no such file or directory"), as check and diff refuse it: a mistyped
// path is a usage error (exit 2), where a model that is there and fails
// to load is the load's (exit 1). "" and "embedded" are the embedded
// stories260K. Commands call it after their checks of flag values and
// other paths, before the first read of the model (its config.json, a
// .bin's header, the load).
func (m *modelFlags) validateModelPath() error {
	if m.model == "" || m.model == "embedded" {
		return nil
	}
	_, err := modelpath.Resolve(m.model)
	return err
}

// checkFit refuses the model-group flag values the model's config.json
// (or a llama2.c header) rules out, before any weight is read: a --tp the
// model cannot be split over, a --load-layers range outside it, --ep on a
// model without routed experts, a --pp its decoder layers cannot be split
// into (engine.CheckFit). These are usage errors, as a bad flag is: every
// command that loads a model (the debugger, generate, plan, capture,
// check, diff) calls it after validateModelPath and exits 2 on it, with
// the same message. A config that cannot be read is left to the load,
// whose failure stays exit 1.
func (m *modelFlags) checkFit() error {
	o, err := m.options()
	if err != nil {
		return err
	}
	path := m.model
	if path == "embedded" {
		path = ""
	}
	return engine.CheckFit(path, o, m.pp)
}

// errUsage marks a refusal of load that is the flags' (--pp without
// workers to run its stages), known before anything is read: loadExit
// makes it exit 2 where a failing load is 1.
var errUsage = errors.New("usage")

// loadExit is the exit status of a failed load: 2 for a refusal of the
// flags (errUsage), 1 for a model that is there and fails to load.
func loadExit(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

// usageError is errUsage's error: it prints as msg alone.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

// validateWorkers checks the values of the worker flags (--pp,
// --worker-links, --worker-timeout, --worker-bin: a binary that is not
// there is a usage error, as a missing --model) before anything starts.
func (m *modelFlags) validateWorkers() error {
	if m.pp < 1 {
		return fmt.Errorf("--pp %d: want at least one stage", m.pp)
	}
	if m.workerLinks != "direct" && m.workerLinks != "hub" {
		return fmt.Errorf("--worker-links %q: want direct or hub", m.workerLinks)
	}
	if m.workerTimeout <= 0 { // worker.Config would take it for its default
		return fmt.Errorf("--worker-timeout %s: want a positive duration (e.g. 10m)", m.workerTimeout)
	}
	if m.workerBin != "" { // as the workers' start finds it (a path, or a name on PATH), before the model is read
		return worker.CheckBinary(m.workerBin)
	}
	return nil
}

// load opens the model and warns on w about what the load skipped:
// checkpoint tensors the architecture does not use (a config.json naming
// the wrong architecture, extra layers) and the parts of a wrapper that
// were left out.
func (m *modelFlags) load(w io.Writer) (*engine.Engine, error) {
	o, err := m.options()
	if err != nil {
		return nil, err
	}
	if err := m.validateWorkers(); err != nil {
		return nil, err
	}
	path := m.model
	if path == "embedded" {
		path = ""
	}
	defaulted := m.device == ""
	dc, err := m.chooseDevice()
	if err != nil {
		return nil, err
	}
	// hint names the defaulted choice in a failure of its workers: the
	// user asked for no device, so say which was taken and how to refuse it.
	hint := func(err error) error {
		if defaulted && dc.device == "cuda" {
			return fmt.Errorf("%w (%s; --device cpu runs on the CPU)", err, dc.why)
		}
		return err
	}
	if m.w8a8 && dc.device == "cpu" {
		// --device cpu --w8a8 was refused by options; a device defaulted
		// to cpu is refused here, before anything is read, saying why the
		// device is the CPU and how to go on.
		return nil, usageError{fmt.Sprintf("--w8a8 needs --device cuda (a GPU with cuBLASLt's block-scaled fp8), and this run is on the CPU (%s), whose backend dequantizes fp8 weights on load: leave --w8a8 out to run the dequantized checkpoint on the CPU", dc.why)}
	}
	m.device, o.Device, o.DeviceWhy = dc.device, dc.device, dc.why
	if dc.note != "" {
		fmt.Fprintf(w, "hsdb: note: %s\n", dc.note)
	}
	if m.pp > 1 && !dc.workers && m.listen == "" {
		return nil, usageError{fmt.Sprintf("--pp %d: pipeline stages run in workers: add --workers (or --listen ADDR)", m.pp)}
	}
	if dc.workers || m.listen != "" {
		cfg := worker.Config{Listen: m.listen, Spawn: m.listen == "", Timeout: m.workerTimeout, Log: w, PP: m.pp, Command: dc.command, Hub: m.workerLinks == "hub"}
		f, err := worker.Start(path, o, cfg)
		if err != nil {
			return nil, hint(err)
		}
		o.Workers = f
	}
	e, err := engine.Open(path, o)
	if err != nil {
		if o.Workers != nil {
			o.Workers.Close()
		}
		return nil, hint(err)
	}
	if e.Skipped != "" {
		fmt.Fprintf(w, "hsdb: note: %s\n", client.PlainText(e.Skipped))
	}
	for _, n := range e.ConfigNotes { // fields config.json left to its class's defaults
		fmt.Fprintf(w, "hsdb: note: %s\n", client.PlainText(n))
	}
	if n := len(e.Report.Unused); n > 0 {
		show := e.Report.Unused[:min(n, 4)]
		more := ""
		if n > len(show) {
			more = fmt.Sprintf(" and %d more", n-len(show))
		}
		// HF warns of tensors its class leaves unread; a multimodal
		// wrapper's class reads its vision tower, which hsdb does not load
		// (e.Skipped says so): there, the note above is the reason.
		why := "HF warns the same; check config.json if this is unexpected"
		if e.Skipped != "" {
			why = "only text_config's language model is loaded, as the note above says"
		}
		fmt.Fprintf(w, "hsdb: warning: %s not used by %s: %s%s (%s)\n",
			plural.Of(n, "checkpoint tensor is", "checkpoint tensors are"), e.Dims.Arch, client.PlainText(strings.Join(show, ", ")), more, why)
	}
	return e, nil
}
