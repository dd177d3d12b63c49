//go:build ignore

// random_checkpoint writes a Llama-architecture HF directory with random
// weights of the given dims, for memory and speed measurements:
//
//	go run scripts/random_checkpoint.go -out DIR [-hidden 2048] [-heads 16]
//	    [-kv 4] [-inter 5632] [-layers 3] [-vocab 32000] [-dtype f32|bf16]
//
// Weights are N(0, 0.02²) from a fixed seed; norms are 1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"hsdb/engine/safetensors"
	"hsdb/engine/tensor"
)

func main() {
	out := flag.String("out", "", "output directory")
	hidden := flag.Int("hidden", 2048, "hidden_size")
	heads := flag.Int("heads", 16, "num_attention_heads")
	kv := flag.Int("kv", 4, "num_key_value_heads")
	inter := flag.Int("inter", 5632, "intermediate_size")
	layers := flag.Int("layers", 3, "num_hidden_layers")
	vocab := flag.Int("vocab", 32000, "vocab_size")
	dtype := flag.String("dtype", "f32", "f32 or bf16")
	flag.Parse()
	dt, err := tensor.ParseDType(*dtype)
	if err != nil || *out == "" {
		fmt.Fprintln(os.Stderr, "need -out and -dtype f32|bf16")
		os.Exit(2)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hd := *hidden / *heads
	var ts []safetensors.Named
	add := func(name string, norm bool, shape ...int) {
		v := make([]float32, tensor.Numel(shape))
		for i := range v {
			if norm {
				v[i] = 1
			} else {
				v[i] = float32(rng.NormFloat64() * 0.02)
			}
		}
		t := tensor.FromF32(v, shape...)
		if dt != tensor.F32 {
			t = t.Convert(dt)
		}
		ts = append(ts, safetensors.Named{Name: name, T: t})
	}
	add("model.embed_tokens.weight", false, *vocab, *hidden)
	for i := range *layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		add(p+"input_layernorm.weight", true, *hidden)
		add(p+"self_attn.q_proj.weight", false, *heads*hd, *hidden)
		add(p+"self_attn.k_proj.weight", false, *kv*hd, *hidden)
		add(p+"self_attn.v_proj.weight", false, *kv*hd, *hidden)
		add(p+"self_attn.o_proj.weight", false, *hidden, *heads*hd)
		add(p+"post_attention_layernorm.weight", true, *hidden)
		add(p+"mlp.gate_proj.weight", false, *inter, *hidden)
		add(p+"mlp.up_proj.weight", false, *inter, *hidden)
		add(p+"mlp.down_proj.weight", false, *hidden, *inter)
	}
	add("model.norm.weight", true, *hidden)
	add("lm_head.weight", false, *vocab, *hidden)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		panic(err)
	}
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": *hidden,
		"intermediate_size": *inter, "num_hidden_layers": *layers, "num_attention_heads": *heads, "num_key_value_heads": *kv,
		"vocab_size": *vocab, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": false, "torch_dtype": map[tensor.DType]string{tensor.F32: "float32", tensor.BF16: "bfloat16"}[dt]}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "config.json"), b, 0o644); err != nil {
		panic(err)
	}
	if err := safetensors.WriteFile(filepath.Join(*out, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		panic(err)
	}
	fmt.Println("wrote", *out)
}
