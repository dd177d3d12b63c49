package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"hsdb/engine/llama2c"
	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/plan"
	"hsdb/engine/quant"
	"hsdb/engine/regfile"
	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

// PlanOptions says what PlanDir plans for (`hsdb plan`'s flags).
type PlanOptions struct {
	TP     int               // --tp; 0 means 1
	EP     bool              // --ep: routed experts placed whole per rank
	Layers *model.LayerRange // --load-layers A-B, or nil for every layer
	DType  tensor.DType      // --dtype for dense weights; Invalid: as stored / config.json
	// Tokens (--max-tokens) is the KV cache's tokens and one step's tokens.
	Tokens int
	// Seqs (--seqs) is the sequences the KV cache keeps, SeqLen (--seq-len)
	// the longest one's tokens (plan.Options.Seqs, SeqLen); 0: 1 and Tokens (at most max_position_embeddings).
	Seqs, SeqLen int
	// DeviceBytes is one device's memory (--device-memory); 0: not checked.
	DeviceBytes int64
	// Stage, when set, plans one pipeline stage (`hsdb plan --pp`): the
	// embedding counted on the first stage only, the final norm and head
	// on the last (model.StageEnds); Layers gives the stage's layers.
	Stage *model.StageEnds
	// Device is the backend planned for: "cuda" (or "") keeps quantized
	// weights at their stored size, one device per rank; "cpu" dequantizes
	// them on load and its virtual ranks share the host's DeviceBytes.
	Device string
	// W8A8 (--w8a8) plans fp8 linears on fp8 activations (plan.Options.W8A8).
	W8A8 bool
}

// DirPlan is the memory plan of a model directory, with what it is based on.
type DirPlan struct {
	*plan.Plan
	Arch string `json:"architecture"`
	// ExpertParallel says the routed experts were planned whole per rank
	// (PlanOptions.EP, --ep), as a dump's manifest says expert_parallel.
	ExpertParallel bool `json:"expert_parallel"`
	// W8A8 says the block-scaled fp8 linears were planned on fp8
	// activations (PlanOptions.W8A8, --w8a8): their inputs' fp8 copies and
	// cuBLASLt's workspace counted with the activations.
	W8A8 bool `json:"w8a8"`
	// Skipped says what of a wrapper config was left out (Kimi-K2.5's
	// vision tower), or "".
	Skipped string `json:"skipped,omitempty"`
	// NotCounted lists parts of the checkpoint the plan leaves out, and why.
	NotCounted []string `json:"not_counted,omitempty"`
	// Notes says what else the plan is based on (a partial download).
	Notes []string `json:"notes,omitempty"`
	// Llama2C says the sizes and tensors came from a llama2.c checkpoint's
	// header (a .bin), not from a config.json and safetensors headers.
	Llama2C bool `json:"llama2c,omitempty"`
}

// PlanDir plans the model in dir from its config.json alone, or with the
// tensor headers of its safetensors when there are any (no tensor data is
// read but int4's 2-integer weight_shape; an index whose shards are not
// downloaded yet plans from config.json alone, with a note). The quantized
// weights the config declares count at their stored size: a GPU keeps them
// quantized. Errors name the file or field: no config.json, a config out of
// bounds (with what the weights imply), a split the model does not allow,
// a broken checkpoint, a weight the load would refuse (the load's error,
// naming the tensor: missing from the checkpoint, with the shape the
// config implies; of another shape or a non-float dtype; a quantized
// weight whose stored tensors QuantScheme.Check refuses). Given --dtype
// (o.DType) on a GPU, a note says the quantized weights stay as stored
// (keptQuantizedNote).
func PlanDir(dir string, o PlanOptions) (*DirPlan, error) {
	// As LoadDir reads it: a named pipe is refused, not waited on, and a
	// file over modelpath.MaxConfigBytes is refused before it is read.
	cfgJSON, err := regfile.ReadFile(filepath.Join(dir, "config.json"), modelpath.MaxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w (a model directory needs config.json)", dir, err)
	}
	var src model.WeightSource
	var note string
	set, err := safetensors.OpenDir(dir)
	switch {
	case err == nil:
		defer set.Close()
		src = stSource{set}
	case errors.Is(err, safetensors.ErrShardMissing):
		note = fmt.Sprintf("the shard index names files that are not here (%v): planned from config.json alone", err)
	case !errors.Is(err, safetensors.ErrEmptyDir):
		return nil, fmt.Errorf("--model %s: %w", dir, err)
	}
	p, err := PlanConfig(cfgJSON, src, o)
	if serr := sourceErr(src); serr != nil { // a shard whose headers could not be read is a broken checkpoint, not absent weights
		return nil, fmt.Errorf("--model %s: %w", dir, serr)
	}
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", dir, err)
	}
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return p, nil
}

// PlanModel plans the model at path as Open would load it
// (modelpath.Resolve): an HF directory through PlanDir; the embedded
// stories260K (path "" or modelpath.Embedded) from its embedded config.json
// and safetensors headers; a llama2.c checkpoint from its 28-byte header
// alone (llama2c.OpenSource): the config it implies and the names and
// shapes of the float32 tensors llama2c.Read would make, the file's size
// checked against them, no weight read.
// Errors name the path (as --model) and what was expected.
func PlanModel(path string, o PlanOptions) (*DirPlan, error) {
	mp, err := modelpath.Resolve(path)
	if err != nil {
		return nil, err
	}
	switch mp.Kind {
	case modelpath.KindHF:
		return PlanDir(mp.Dir, o)
	case modelpath.KindLlama2C:
		src, err := llama2c.OpenSource(mp.File) // the header alone: no weight is read
		if err != nil {
			return nil, err
		}
		p, err := PlanConfig(src.Header.ConfigJSON(), src, o)
		if err != nil {
			return nil, fmt.Errorf("--model %s: %w", path, err)
		}
		p.Llama2C = true
		return p, nil
	}
	cfg, src, err := defaultModel()
	if err != nil {
		return nil, err
	}
	p, err := PlanConfig(cfg, src, o)
	if err != nil {
		return nil, fmt.Errorf("--model %s: %w", DefaultModelPath, err)
	}
	return p, nil
}

// PlanConfig plans the model config.json bytes cfgJSON describe, with the
// tensor headers of src when it is not nil (PlanDir without the files).
func PlanConfig(cfgJSON []byte, src model.WeightSource, o PlanOptions) (*DirPlan, error) {
	world := max(o.TP, 1)
	cfg, skipped, tree, err := buildTree(cfgJSON, world, Options{TP: world, EP: o.EP, Layers: o.Layers})
	if err != nil {
		return nil, explainLimit(err, src, cfgJSON)
	}
	if err := checkDefaults(cfg, tree, src); err != nil {
		return nil, err
	}
	qs, err := quant.FromConfig(cfgJSON)
	if err != nil {
		return nil, err
	}
	cpu := o.Device == "cpu"
	act := plan.ActivationDType(o.DType, cfg.Dims())
	if cpu {
		act = tensor.F32 // the CPU backend computes in float32
	}
	p, err := plan.New(tree, cfg.Dims(), plan.Options{World: world, Tokens: o.Tokens, Seqs: o.Seqs, SeqLen: o.SeqLen, DeviceBytes: o.DeviceBytes, DType: o.DType,
		Act: act, Quant: qs, Src: src, Dequantize: cpu, Shared: cpu, Stage: o.Stage, W8A8: o.W8A8 && !cpu})
	if err != nil {
		return nil, hintDefaults(cfg, err)
	}
	dp := &DirPlan{Plan: p, Arch: cfg.Dims().Arch, ExpertParallel: o.EP, W8A8: o.W8A8 && !cpu, Skipped: skipped}
	dp.Notes = append(dp.Notes, defaultNotes(cfg)...)
	if note := packNote(p, cfg.Dims().MaxPos); note != "" {
		dp.Notes = append(dp.Notes, note)
	}
	if note := keptQuantizedNote(p, o.DType, qs); note != "" && !cpu {
		dp.Notes = append(dp.Notes, note)
	}
	if n := nextnLayers(cfgJSON); n > 0 {
		dp.NotCounted = append(dp.NotCounted, fmt.Sprintf("num_nextn_predict_layers %d: the multi-token-prediction layer(s) after layer %d, which vLLM loads only as a speculative-decoding draft (DeepSeekMTP), not with %s",
			n, cfg.Dims().Layers-1, cfg.Dims().Arch))
	}
	return dp, nil
}

// packNote says when plan p's step of Tokens tokens cannot be the
// sequences its KV cache is counted for: Seqs slots of at most SeqLen
// tokens hold fewer, so the step packs more sequences than --seqs (on
// stories260K, max_position_embeddings 512, the default 4096-token step is
// at least 8 sequences, while one slot of 512 rows was counted beside
// activations for 4096 tokens). "" when Seqs × SeqLen covers Tokens.
func packNote(p *plan.Plan, maxPos int) string {
	if p.SeqLen <= 0 || int64(p.Tokens) <= int64(p.Seqs)*int64(p.SeqLen) {
		return ""
	}
	least := (p.Tokens + p.SeqLen - 1) / p.SeqLen
	why := "--seq-len"
	if p.SeqLen == maxPos {
		why = "max_position_embeddings"
	}
	return fmt.Sprintf("a step of %d tokens (--max-tokens) is at least %d sequences of at most %d tokens (%s), but the KV cache is counted for %d (--seqs): --seqs %d counts the cache such a step needs, or --max-tokens %d plans a step the cache holds",
		p.Tokens, least, p.SeqLen, why, p.Seqs, least, int64(p.Seqs)*int64(p.SeqLen))
}

// keptQuantizedNote says, for a GPU plan p given --dtype dt (not
// Invalid) of a checkpoint whose weights scheme qs keeps quantized, that
// --dtype did not re-plan them: the CUDA backend keeps them at their
// stored size (model.Loader.Linear uploads them quantized; dt converts the
// dense weights and is the activations' and KV cache's dtype), so
// DeepSeek-V3's plan with --dtype bf16 equals its plan without. A bf16
// plan of such a model is one of its config.json without
// quantization_config: a dense checkpoint, since the load refuses fp8 or
// packed int4 tensors without it. "" when dt is not given, the plan keeps
// no weight quantized (a dense checkpoint, the CPU backend's dequantized
// ones) or qs is nil.
func keptQuantizedNote(p *plan.Plan, dt tensor.DType, qs model.QuantScheme) string {
	if dt == tensor.Invalid || qs == nil {
		return ""
	}
	kept := false
	for _, r := range p.Ranks {
		kept = kept || r.QuantizedWeights > 0
	}
	if !kept {
		return ""
	}
	return fmt.Sprintf("--dtype %s converts the dense weights and sets the activations and KV cache; the quantized weights (%s) stay at their stored size on the GPU, as the CUDA backend keeps them: to plan the model in %s throughout, plan its config.json without quantization_config (a dense %s checkpoint; the load refuses quantized tensors without it)",
		dt, qs, dt, dt)
}

// buildTree parses config.json, applies opts' expert parallelism and layer
// range, checks the split over world ranks and the tree's size, and builds
// the module tree: the steps a load and a plan share.
func buildTree(cfgJSON []byte, world int, opts Options) (model.Config, string, *model.Tree, error) {
	cfg, skipped, err := applyOptions(cfgJSON, world, opts)
	if err != nil {
		return nil, "", nil, err
	}
	if err := model.CheckTreeSize(cfg.Dims(), world); err != nil {
		return nil, "", nil, err
	}
	return cfg, skipped, cfg.Tree(world), nil
}

// applyOptions parses config.json and applies opts' expert parallelism
// and layer range, and checks the split over world ranks: the steps of
// buildTree that CheckFit takes before a load, with what of a wrapper
// config was left out (model.ParseConfig's skipped).
func applyOptions(cfgJSON []byte, world int, opts Options) (model.Config, string, error) {
	cfg, skipped, err := model.ParseConfig(cfgJSON)
	if err != nil {
		return nil, "", err
	}
	if opts.EP {
		ep, ok := cfg.(model.ExpertParallel)
		if !ok {
			return nil, "", fmt.Errorf("--ep: %s has no routed experts", cfg.Dims().Arch)
		}
		if err := ep.SetExpertParallel(true); err != nil {
			return nil, "", err
		}
	}
	if opts.Layers != nil {
		ls, ok := cfg.(model.LayerSelector)
		if !ok {
			return nil, "", fmt.Errorf("--load-layers %s: %s cannot load a range of layers", opts.Layers, cfg.Dims().Arch)
		}
		if err := ls.SelectLayers(*opts.Layers); err != nil {
			return nil, "", err
		}
	}
	if err := cfg.Validate(world); err != nil {
		return nil, "", err
	}
	if err := checkWorldTree(cfg.Dims(), world); err != nil {
		return nil, "", err
	}
	return cfg, skipped, nil
}

// checkWorldTree refuses a world size (--tp) that alone makes the module
// tree of d larger than hsdb plans (model.CheckTreeSize: layers ×
// (routed experts + 1) × world at most model.MaxTreeEntries), naming --tp
// and the largest world size the model takes: a fault of the flag (every
// command's usage error, CheckFit), not of config.json (4096 layers at
// --tp 4096 are 2²⁴ shards, at --tp 1024 2²²). The error wraps
// model.ErrConfigLimit, as every bound violation does (tpTreeError). A
// tree too large at one rank is config.json's, left to
// model.CheckTreeSize in buildTree (nil here).
func checkWorldTree(d *model.Dims, world int) error {
	if world <= 1 || model.CheckTreeSize(d, world) == nil || model.CheckTreeSize(d, 1) != nil {
		return nil
	}
	perRank := int64(d.Layers) * int64(d.Named["n_routed_experts"]+1) // ≤ MaxTreeEntries: CheckTreeSize(d, 1) passed
	return tpTreeError(fmt.Sprintf("--tp %d: num_hidden_layers %d × (n_routed_experts %d + 1) × world size %d is %d parameter shards, more than hsdb plans (%d); the world size must be at most %d for this model",
		world, d.Layers, d.Named["n_routed_experts"], world, perRank*int64(world), model.MaxTreeEntries, model.MaxTreeEntries/perRank))
}

// tpTreeError is checkWorldTree's refusal: its text names --tp, and it
// wraps model.ErrConfigLimit (the bound exceeded is hsdb's MaxTreeEntries)
// without that error's "config.json value out of range", which blamed
// config.json for the flag's value.
type tpTreeError string

// Error returns the refusal's text, starting "--tp N: ".
func (e tpTreeError) Error() string { return string(e) }

// Unwrap returns model.ErrConfigLimit.
func (e tpTreeError) Unwrap() error { return model.ErrConfigLimit }

// nextnLayers returns config.json's num_nextn_predict_layers (in the
// object that holds the language model: the top level or text_config), 0
// when absent.
func nextnLayers(cfgJSON []byte) int {
	var c struct {
		N    int `json:"num_nextn_predict_layers"`
		Text *struct {
			N int `json:"num_nextn_predict_layers"`
		} `json:"text_config"`
	}
	if json.Unmarshal(cfgJSON, &c) != nil {
		return 0
	}
	if c.Text != nil && c.Text.N > 0 {
		return c.Text.N
	}
	return c.N
}
