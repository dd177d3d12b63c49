package engine

import (
	"fmt"

	"hsdb/engine/model"
	"hsdb/engine/modelpath"
	"hsdb/engine/plan"
	"hsdb/engine/quant"
)

// CheckFit refuses the options the model's config rules out, before any
// weight is read: --ep on a model without routed experts, a --load-layers
// range outside num_hidden_layers (or on an architecture that cannot load
// a range), a --tp (opts.TP) the config cannot be split over
// (model.Config.Validate: heads, kv heads, intermediate sizes, with --ep
// applied as the load applies it), and pp pipeline stages (--pp) the
// decoder layers cannot be split into or given beside --load-layers
// (model.CheckStages), and --w8a8 (opts.W8A8) on a checkpoint without
// block-scaled fp8 weights or with activations other than bf16. Every command calls it before its load, so that
// these are one message each, the load's own words, and a usage error.
// path is as Open takes it ("" for the embedded stories260K); errors start
// with the model's name as the load's do. A config that cannot be read or
// parsed, or that its architecture refuses at one rank and no option, is
// not the options' fault: nil, left for the load (or plan) to report.
func CheckFit(path string, opts Options, pp int) error {
	cfgJSON, _, err := modelpath.ConfigJSON(path)
	if err != nil {
		return nil
	}
	name := path
	if name == "" || name == "embedded" || name == modelpath.Embedded {
		name = DefaultModelPath
	}
	// The config alone, at one rank with no option, must be valid for a
	// refusal to be the options': a config the architecture refuses
	// anyway is the load's to name.
	bare, _, err := model.ParseConfig(cfgJSON)
	if err != nil || bare.Validate(1) != nil {
		return nil
	}
	if err := model.CheckStages(bare.Dims().Layers, pp, opts.Layers); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	world := max(opts.TP, 1)
	cfg, _, err := applyOptions(cfgJSON, world, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if opts.W8A8 {
		qs, err := quant.FromConfig(cfgJSON)
		if err != nil {
			return nil // a quantization_config the load cannot read is the load's to name
		}
		if err := w8a8Quant(qs); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := w8a8Act(plan.ActivationDType(opts.DType, cfg.Dims()), opts.DType); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
