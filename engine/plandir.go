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
// a broken checkpoint, a quantized weight whose stored tensors the load
// would refuse (QuantScheme.Check: the load's error, naming the tensor).
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
		return nil, err
	}
	dp := &DirPlan{Plan: p, Arch: cfg.Dims().Arch, ExpertParallel: o.EP, W8A8: o.W8A8 && !cpu, Skipped: skipped}
	if note := packNote(p, cfg.Dims().MaxPos); note != "" {
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
	return cfg, skipped, nil
}

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
