package engine

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"hsdb/engine/backend"
	"hsdb/engine/backend/cpu"
	"hsdb/engine/llama2c"
	"hsdb/engine/model"
	"hsdb/engine/plan"
	"hsdb/engine/quant"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
	"hsdb/engine/tokenizer"

	_ "hsdb/engine/arch" // registers the architectures
)

// Options says how to load a model.
type Options struct {
	// TP is the tensor-parallel world size (--tp): the number of ranks the
	// weights are split over. 0 means 1.
	TP int
	// Device is "cpu" (default) or "cuda" (needs a binary built with
	// -tags cuda).
	Device string
	// DType converts weights on load (--dtype); Invalid keeps the stored
	// dtype.
	DType tensor.DType
	// EP places whole routed experts on the ranks (--ep, vLLM's
	// --enable-expert-parallel) instead of splitting every expert's
	// intermediate dimension (--moe tp, the default). Only models with
	// routed experts accept it.
	EP bool
	// Layers, when set (--load-layers A-B), builds and loads only these decoder
	// layers with the embeddings, final norm and LM head.
	Layers *model.LayerRange
	// MemoryLimit is the memory, in bytes, the weights may take (summed over
	// the virtual ranks on the CPU, per rank on a GPU); 0 means what the
	// machine reports (MemAvailable on the CPU; on GPUs each GPU's free
	// memory once the devices are open, shared by the ranks placed on it).
	// A load whose memory plan (engine/plan, weights only) exceeds it fails
	// with ErrMemory, naming the rank or GPU and the shortfall, before
	// reading any weight.
	MemoryLimit int64
	// Workers, when set, runs the ranks in worker processes (--workers):
	// the engine loads no weights and drives each rank through
	// Workers.Ranks (see Workers); the workers check their own memory.
	Workers Workers
	// Worker, when set, makes this the engine of one worker process: only
	// rank Worker.Rank of the TP world is loaded, onto Worker.Dev, and
	// RunStep runs it.
	Worker *WorkerRank
	// W8A8 (--w8a8) computes the block-scaled fp8 linears of an fp8
	// checkpoint on CUDA as fp8 × fp8 GEMMs on activations quantized per
	// token and 128 columns (quantization_config's activation_scheme
	// "dynamic": what DeepSeek-V3's inference code, vLLM and SGLang
	// compute) instead of widening the weights to bf16 (the default, whose
	// results equal the checkpoint dequantized, as on the CPU). It needs
	// --device cuda, bf16 activations and block-scaled fp8 weights.
	W8A8 bool
	// DeviceWhy says how the device was chosen ("--device defaulted to
	// cuda: hsdb-cuda-worker sees 1 GPU(s)…"); kept as Engine.DeviceWhy
	// for the banner and `info model`.
	DeviceWhy string
}

// Engine is a loaded model split over World ranks, ready to run forward
// steps. It keeps the sequences of the last prefill so that Decode can
// continue them. An Engine is not safe for concurrent forward calls.
type Engine struct {
	Path   string           // where the model came from ("embedded:stories260K" for the default)
	Config model.Config     // the architecture's typed config.json
	Dims   *model.Dims      // the sizes every architecture reports (config.json names)
	Tree   *model.Tree      // vLLM's module tree; Tree.Sites in visit order
	World  int              // the tensor-parallel world size (Options.TP, at least 1)
	Report model.LoadReport // what loading did (quantized weights, unused tensors, bytes)
	// Quant is how the checkpoint stores its quantized linear weights
	// (config.json's quantization_config), or nil.
	Quant model.QuantScheme
	// Estimate is the bytes of weights each rank was expected to hold,
	// from the memory plan checked before loading (plan.New).
	Estimate []int64
	// DeviceWhy is Options.DeviceWhy.
	DeviceWhy string
	// WeightDType is Options.DType: the dtype the weights were converted
	// to on load (--dtype), Invalid when kept as stored. EP is Options.EP.
	// Both change the numerics of a pass (a capture's manifest records
	// them: a dump is not resumed under others).
	WeightDType tensor.DType
	EP          bool
	// W8A8 is Options.W8A8: fp8 linears on fp8 activations; it changes
	// the numerics too (a capture's manifest records it).
	W8A8 bool
	// Skipped says what of the checkpoint was not loaded (a multimodal
	// wrapper's vision tower), or "".
	Skipped string
	// ConfigNotes says which fields config.json left to its HF config
	// class's defaults that size weights or change the routing
	// ("n_shared_experts 1 is DeepseekV3Config's default (config.json has
	// none)"), for the front end to print at load; nil when none.
	ConfigNotes []string
	// Faults are injected into every pass while set (`inject`; nil: none).
	Faults model.Faults

	ranks     []*rankState
	commGroup *backend.Group
	siteGroup *backend.Group
	seqs      []seqState // sequences of the current prefill, by slot
	step      int
	closers   []func() error
	tok       tokenizer.Tokenizer
	tokErr    error
	weights   interface{ BytesRead() int64 }
	workers   Workers // the ranks' worker processes (Options.Workers), or nil
}

type rankState struct {
	index int        // the rank's index in the world
	pipe  model.Pipe // a worker's pipeline stage (WorkerRank.Pipe), or nil
	dev   backend.Device
	comm  backend.Comm
	model model.RankModel
	cache *model.Cache
}

type seqState struct {
	ids []int32 // every token so far (prompt and generated)
}

// ErrDevice is returned when the requested device is not available in this
// build or on this machine.
var ErrDevice = errors.New("device")

// newDevices returns world devices and communicators for opts.Device, and
// the rendezvous group of in-process collectives (nil when there is none,
// as under NCCL). act is the activation dtype (the CPU backend always
// computes in f32). newCUDADevices is set by the cuda build (cuda.go).
var newCUDADevices func(world int, act tensor.DType) ([]backend.Device, []backend.Comm, *backend.Group, error)

// wrapCPU wraps each CPU rank's device; tests replace it to inject a
// faulty op (a NaN-writing Add) and prove the parity tests catch it.
var wrapCPU = func(d backend.Device) backend.Device { return d }

// CUDABuiltIn reports whether this binary can run CUDA ranks in process
// (it was built with -tags cuda).
func CUDABuiltIn() bool { return newCUDADevices != nil }

func newDevices(opts Options, world int, act tensor.DType) ([]backend.Device, []backend.Comm, *backend.Group, error) {
	switch opts.Device {
	case "", "cpu":
		g := backend.NewGroup(world)
		comms := cpu.NewComms(g)
		devs := make([]backend.Device, world)
		cs := make([]backend.Comm, world)
		for r := range world {
			name := -1
			if world > 1 {
				name = r
			}
			devs[r] = wrapCPU(cpu.New(name))
			cs[r] = comms[r]
		}
		return devs, cs, g, nil
	case "cuda":
		if newCUDADevices == nil {
			return nil, nil, nil, fmt.Errorf("%w: --device cuda: this hsdb was built without CUDA support (build with -tags cuda)", ErrDevice)
		}
		return newCUDADevices(world, act)
	}
	return nil, nil, nil, fmt.Errorf("%w: --device %q: want cpu or cuda", ErrDevice, opts.Device)
}

// LoadSource builds an engine from config.json bytes and a weight source.
// path names the model in messages. Errors: an unsupported architecture, a
// config that cannot be split over opts.TP ranks, a missing or misshapen
// weight (named with its expected shape).
func LoadSource(path string, configJSON []byte, src model.WeightSource, opts Options) (*Engine, error) {
	world := max(opts.TP, 1)
	cfg, skipped, tree, err := buildTree(configJSON, world, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, explainLimit(err, src, configJSON))
	}
	if err := checkDefaults(cfg, tree, src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	qs, err := quant.FromConfig(configJSON)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	mem, err := loadPlan(cfg, tree, world, src, qs, opts)
	if serr := sourceErr(src); serr != nil { // the plan read headers of a broken shard: that is the cause, not a tensor it found absent
		return nil, fmt.Errorf("%s: %w", path, serr)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, hintDefaults(cfg, err))
	}
	estimate := mem.Weights()
	e := &Engine{Path: path, Config: cfg, Dims: cfg.Dims(), Tree: tree, World: world, Skipped: skipped, DeviceWhy: opts.DeviceWhy, Estimate: estimate, Quant: qs,
		WeightDType: opts.DType, EP: opts.EP, W8A8: opts.W8A8,
		siteGroup: backend.NewGroup(world), ConfigNotes: defaultNotes(cfg)}
	if opts.Workers != nil { // the workers plan and check their own memory
		return loadRemote(e, opts)
	}
	if err := mem.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ranks := make([]int, world)
	for r := range ranks {
		ranks[r] = r
	}
	var devs []backend.Device
	var comms []backend.Comm
	if w := opts.Worker; w != nil {
		if w.Rank < 0 || w.Rank >= world {
			return nil, fmt.Errorf("%s: worker rank %d outside the world of %d", path, w.Rank, world)
		}
		ranks, devs, comms = []int{w.Rank}, []backend.Device{w.Dev}, []backend.Comm{w.Comm}
	} else {
		devs, comms, e.commGroup, err = newDevices(opts, world, activationDType(opts, cfg.Dims()))
		if err != nil {
			return nil, err
		}
	}
	for r := range devs { // device memory, NCCL communicators
		if c, ok := devs[r].(io.Closer); ok {
			e.closers = append(e.closers, c.Close)
		}
		if c, ok := comms[r].(io.Closer); ok {
			e.closers = append(e.closers, c.Close)
		}
	}
	if err := setW8A8(opts, qs, devs, ranks); err != nil {
		e.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if mem.DeviceBytes == 0 && opts.Worker == nil { // no limit known before the devices: ask the GPUs (before any weight is read)
		if err := checkDevices(mem, devs); err != nil {
			e.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for i, r := range ranks {
		l := model.NewLoader(src, devs[i], r, world, opts.DType)
		l.Quant = qs
		l.Detach = safetensors.Detach                    // the CPU backend's weights must not alias the checkpoint's mapping
		if w := opts.Worker; w != nil && w.Pipe != nil { // a pipeline stage: its ends only where vLLM places them
			l.Stage = &model.StageEnds{First: w.Pipe.First(), Last: w.Pipe.Last()}
		}
		rm, err := loadRank(cfg, l, e.Tree)
		if serr := sourceErr(src); serr != nil { // a broken shard, whether or not the load noticed
			e.Close()
			return nil, fmt.Errorf("%s: rank %d: %w", path, r, serr)
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("%s: rank %d: %w", path, r, hintDefaults(cfg, err))
		}
		e.Report.Bytes += l.Report.Bytes
		e.Report.Dequantized, e.Report.Formats = appendNewQuant(e.Report.Dequantized, e.Report.Formats, l.Report.Dequantized, l.Report.Formats)
		if l.Report.Format != "" {
			e.Report.Format = l.Report.Format
		}
		if r == 0 {
			e.Report.Unused = l.Report.Unused
		}
		rs := &rankState{index: r, dev: devs[i], comm: comms[i], model: rm, cache: model.NewCache(e.Dims.Layers)}
		if opts.Worker != nil {
			rs.pipe = opts.Worker.Pipe
		}
		e.ranks = append(e.ranks, rs)
	}
	if e.Report.Unused == nil && opts.Layers == nil {
		e.Report.Unused = unusedByTree(src, e.Tree, qs)
	}
	return e, nil
}

// unusedByTree lists the checkpoint's tensors that no parameter of the
// module tree names (a checkpoint of another architecture than config.json
// says, layers beyond num_hidden_layers), as HF's "Some weights of the
// checkpoint were not used" warning does. A routed expert's weights saved
// fused (model.FusedExpertName's tensors) are used. The tensors a quantized weight is
// stored in (qs.Stored: fp8 scales) and the rotary inv_freq buffers old HF
// checkpoints carry are not reported. Sources that cannot list their
// tensors give nil.
func unusedByTree(src model.WeightSource, t *model.Tree, qs model.QuantScheme) []string {
	lister, ok := src.(interface{ Names() []string })
	if !ok {
		return nil
	}
	used := map[string]bool{}
	for _, p := range t.Params() {
		used[p.Name] = true
		if fused, _, _, ok := model.FusedExpertName(p.Name); ok { // transformers 5's fused experts, which the loader slices
			used[fused] = true
		}
		if qs != nil {
			for _, n := range qs.Stored(src, p.Name) {
				used[n] = true
			}
		}
	}
	var out []string
	for _, n := range lister.Names() {
		if used[n] || strings.HasSuffix(n, "rotary_emb.inv_freq") {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// appendNewQuant appends the names of quantized weights (with their
// formats: LoadReport.Dequantized and .Formats, index for index) that names
// does not hold yet, in order (every rank dequantizes its own experts under
// expert parallelism); a format missing is "".
func appendNewQuant(names, formats, addNames, addFormats []string) ([]string, []string) {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		seen[n] = true
	}
	for len(formats) < len(names) {
		formats = append(formats, "")
	}
	for i, n := range addNames {
		if seen[n] {
			continue
		}
		seen[n] = true
		f := ""
		if i < len(addFormats) {
			f = addFormats[i]
		}
		names, formats = append(names, n), append(formats, f)
	}
	return names, formats
}

// activationDType is the dtype a device computes in (plan.ActivationDType).
func activationDType(opts Options, d *model.Dims) tensor.DType {
	return plan.ActivationDType(opts.DType, d)
}

// loadRank runs cfg.Load, turning a device failure while uploading (out of
// device memory) into an error, and so a checkpoint cut short while the
// load reads it: the load runs with debug.SetPanicOnFault, so that a read
// of a page of the mapping the file no longer has (SIGBUS) panics with the
// address, which safetensors.ChangedError names the file of (ErrChanged).
// A fault at any other address panics on.
func loadRank(cfg model.Config, l *model.Loader, t *model.Tree) (rm model.RankModel, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if fault, ok := p.(interface{ Addr() uintptr }); ok {
				if cerr := safetensors.ChangedError(fault.Addr()); cerr != nil {
					err = fmt.Errorf("loading weights: %w", cerr)
					return
				}
			}
			de, ok := p.(*backend.DeviceError)
			if !ok {
				panic(p)
			}
			err = fmt.Errorf("loading weights: %w", de)
		}
	}()
	return cfg.Load(l, t)
}

// Device returns rank r's device (for statistics at a stop): under
// Workers, the front's stand-in for the worker's.
func (e *Engine) Device(r int) backend.Device {
	if e.workers != nil {
		return e.workers.Ranks()[r].Device()
	}
	return e.ranks[r].dev
}

// MemoryInUse returns each rank's device bytes in use (weights, KV cache).
func (e *Engine) MemoryInUse() []int64 {
	if e.workers == nil {
		out := make([]int64, len(e.ranks))
		for i, r := range e.ranks {
			out[i] = r.dev.MemoryInUse()
		}
		return out
	}
	out := make([]int64, e.World)
	for r := range out {
		out[r] = e.Device(r).MemoryInUse()
	}
	return out
}

// Remote reports whether the ranks run in worker processes
// (Options.Workers): their weights and compute are not in this process.
func (e *Engine) Remote() bool { return e.workers != nil }

// CacheBytes returns each rank's KV-cache bytes.
func (e *Engine) CacheBytes() []int64 {
	if e.workers != nil {
		out := make([]int64, e.World)
		for r, rr := range e.workers.Ranks() {
			out[r] = rr.CacheBytes()
		}
		return out
	}
	out := make([]int64, len(e.ranks))
	for i, r := range e.ranks {
		out[i] = r.cache.Bytes(r.dev.ActDType())
	}
	return out
}

// LoadLlama2C loads a llama2.c checkpoint (run.c's format: a 7-int32
// header, then float32 weights), converting it to HF layout in memory
// (llama2c.Read), then loads it as LoadSource does with opts. Errors:
// llama2c.Read's, naming path and the header field or weight that does
// not fit, then LoadSource's.
func LoadLlama2C(path string, opts Options) (*Engine, error) {
	ck, err := llama2c.Read(path)
	if err != nil {
		return nil, err
	}
	return LoadSource(path, ck.ConfigJSON(), &model.MapSource{Name: path, Tensors: ck.Tensors}, opts)
}

// Lens returns rank r's final norm and LM head, ok=false when the
// architecture does not expose them or the ranks run in workers (Remote).
func (e *Engine) Lens(r int) (model.Lens, bool) {
	if e.workers != nil { // the weights live in the workers
		return model.Lens{}, false
	}
	lm, ok := e.ranks[r].model.(model.LensModel)
	if !ok {
		return model.Lens{}, false
	}
	lw := lm.Lens()
	if lw.Norm == nil || lw.Head == nil { // a pipeline stage before the last
		return model.Lens{}, false
	}
	return lw, true
}
