package model

// StageEnds says which ends of the model a pipeline stage holds, as vLLM
// places them (vllm/distributed/utils.py get_pp_indices; the models'
// `if get_pp_group().is_first_rank` / `is_last_rank`): the embedding
// (model.embed_tokens) on the first stage, the final norm (model.norm) and
// the LM head (lm_head) on the last. With tied embeddings the head is the
// embedding's weight, so the last stage holds that too. A nil *StageEnds
// holds everything (no pipeline).
type StageEnds struct{ First, Last bool }

// Module paths of the model's ends (engine/nn's CausalLM).
const (
	EmbedPath = "model.embed_tokens"
	NormPath  = "model.norm"
	HeadPath  = "lm_head"
)

// Holds reports whether the stage loads the parameters of module path of
// tree t (its "weight"): every module but the ends, the ends as StageEnds
// says; tied reports whether the head is the embedding's weight.
func (s *StageEnds) Holds(path string, tied bool) bool {
	if s == nil {
		return true
	}
	switch path {
	case EmbedPath:
		return s.First || (tied && s.Last)
	case NormPath, HeadPath:
		return s.Last
	}
	return true
}

// TiedHead reports whether tree t's LM head has no weight of its own (it
// uses the embedding's: tie_word_embeddings).
func (t *Tree) TiedHead() bool {
	m := t.Module(HeadPath)
	return m != nil && len(m.Params) == 0
}
