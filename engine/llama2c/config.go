package llama2c

import "encoding/json"

// ConfigJSON returns the HF config.json of the checkpoint (Header.ConfigJSON).
func (ck *Checkpoint) ConfigJSON() []byte { return ck.Header.ConfigJSON() }

// ConfigJSON returns the HF config.json a checkpoint with this header
// implies: a LlamaForCausalLM with llama2.c's fixed choices (RMSNorm eps
// 1e-5, RoPE theta 10000, SiLU, BOS 1, EOS 2; run.c hard-codes these),
// the classifier tied to the embedding when VocabSize > 0.
func (h Header) ConfigJSON() []byte {
	vocab := h.vocab()
	cfg := map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"hidden_size":             h.Dim,
		"intermediate_size":       h.HiddenDim,
		"num_hidden_layers":       h.Layers,
		"num_attention_heads":     h.Heads,
		"num_key_value_heads":     h.KVHeads,
		"vocab_size":              vocab,
		"max_position_embeddings": h.SeqLen,
		"rms_norm_eps":            1e-5,
		"rope_theta":              10000.0,
		"hidden_act":              "silu",
		"tie_word_embeddings":     h.VocabSize > 0,
		"torch_dtype":             "float32",
		"bos_token_id":            1,
		"eos_token_id":            2,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n')
}
