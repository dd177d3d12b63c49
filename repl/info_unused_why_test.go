package repl

import (
	"testing"

	"hsdb/engine"
)

// TestInfoModelUnusedSaysWhy: on Kimi-K2.5's wrapper (the fixture's four
// vision tensors, vision_tower.* and mm_projector.*, which its generator
// records as unused_in_kimi_k25), `info model --unused` listed them with
// no reason, and `info model` flagged them as a warning whose reason only
// a later row gave; hsdb's start-up warning says why
// ("only text_config's language model is loaded"). Both now say it.
func TestInfoModelUnusedSaysWhy(t *testing.T) {
	f := openFake(t, "../testdata/hf/kimi_k25", engine.Options{})
	f.AssertExec("info model --unused",
		"4 checkpoint tensors are not used by the model:\n  mm_projector.pre_norm.weight\n  mm_projector.proj.0.weight\n  vision_tower.encoder.blocks.0.wqkv.weight\n  vision_tower.patch_embed.proj.weight\n",
		"why: [KimiK25ForConditionalGeneration] (model_type \"kimi_k25\") wraps the language model in text_config; only it is loaded")
	f.AssertExec("info model",
		"vision_tower.patch_embed.proj.weight (only text_config's language model is loaded, as `not loaded` below says)")
}
