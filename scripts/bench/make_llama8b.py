#!/usr/bin/env python3
"""Write a Llama-3-8B-shaped checkpoint with random bf16 weights for
scripts/bench-gpu.sh: config.json (hidden 4096, 32 layers, 32 heads, 8 kv
heads, intermediate 14336, vocab 128256, rope_theta 500000) and
model-0000N-of-0000M.safetensors shards with model.safetensors.index.json,
the layout HF's save_pretrained writes.

Weights are N(0, 0.02^2) (HF's initializer_range) drawn on the GPU with a
fixed seed, RMSNorm weights 1. The directory is reused when it already holds
a complete checkpoint (the index and every shard it names).

Usage: make_llama8b.py --out DIR [--layers N]

--layers N keeps Llama-3-8B's shapes with N decoder layers instead of 32
(a quicker checkpoint for measurements that compare two runs of the same
model, such as workers against in-process ranks).
"""
import argparse
import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": 128000,
    "eos_token_id": 128001,
}


def tensors():
    """Yield (name, shape) in HF's order."""
    c = CONFIG
    H, I, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    yield "model.embed_tokens.weight", (c["vocab_size"], H)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (H,)
        yield p + "self_attn.q_proj.weight", (q, H)
        yield p + "self_attn.k_proj.weight", (kv, H)
        yield p + "self_attn.v_proj.weight", (kv, H)
        yield p + "self_attn.o_proj.weight", (H, q)
        yield p + "post_attention_layernorm.weight", (H,)
        yield p + "mlp.gate_proj.weight", (I, H)
        yield p + "mlp.up_proj.weight", (I, H)
        yield p + "mlp.down_proj.weight", (H, I)
    yield "model.norm.weight", (H,)
    yield "lm_head.weight", (c["vocab_size"], H)


def complete(out):
    idx = os.path.join(out, "model.safetensors.index.json")
    if not os.path.exists(idx) or not os.path.exists(os.path.join(out, "config.json")):
        return False
    with open(idx) as f:
        files = set(json.load(f)["weight_map"].values())
    return all(os.path.exists(os.path.join(out, f)) for f in files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--shard-gb", type=float, default=4.0)
    ap.add_argument("--layers", type=int, default=32)
    args = ap.parse_args()
    if not 1 <= args.layers <= 32:
        ap.error(f"--layers {args.layers}: want 1 to 32")
    CONFIG["num_hidden_layers"] = args.layers
    if complete(args.out):
        print(f"make_llama8b: {args.out} already holds the checkpoint")
        return
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    gen = torch.Generator(device="cuda").manual_seed(0)
    shards, cur, cur_bytes = [], {}, 0
    limit = int(args.shard_gb * (1 << 30))
    for name, shape in tensors():
        if len(shape) == 1:
            t = torch.ones(shape, dtype=torch.bfloat16)
        else:
            t = (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float32) * 0.02).to(torch.bfloat16).cpu()
        n = t.numel() * 2
        if cur and cur_bytes + n > limit:
            shards.append(cur)
            cur, cur_bytes = {}, 0
        cur[name] = t
        cur_bytes += n
    shards.append(cur)
    total = len(shards)
    weight_map, size = {}, 0
    for i, sd in enumerate(shards):
        fn = f"model-{i + 1:05d}-of-{total:05d}.safetensors"
        tmp = os.path.join(args.out, fn + ".tmp")
        save_file(sd, tmp, metadata={"format": "pt"})
        os.replace(tmp, os.path.join(args.out, fn))
        for k, v in sd.items():
            weight_map[k] = fn
            size += v.numel() * 2
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": weight_map}, f, indent=2)
    print(f"make_llama8b: wrote {size / 2**30:.1f} GiB in {total} shards to {args.out} in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
