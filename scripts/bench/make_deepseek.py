#!/usr/bin/env python3
"""Write DeepSeek-V3-shaped checkpoints with random weights for
scripts/bench/bench-deepseek.sh: DeepSeek-V3's real layer shapes (hidden
7168, intermediate 18432, moe_intermediate 2048, 256 routed experts + 1
shared, top-8 in 8 groups / topk_group 4, q_lora 1536, kv_lora 512, 128
heads, qk_nope 128, qk_rope 64, v_head 128, vocab 129280, YaRN RoPE as
released) with 2 layers, first_k_dense_replace 1 (layer 0 dense, layer 1
MoE): 13.9 B parameters.

Two directories, same values:
  OUT/bf16  bf16 weights (e_score_correction_bias f32), the layout of
            DeepSeek's release (experts one tensor per projection);
  OUT/fp8   the release's format: every linear weight of the decoder
            layers except the router gate as float8_e4m3fn with a float32
            weight_scale_inv per 128x128 block (scale = block amax / 448,
            DeepSeek-V3 inference/kernel.py's weight_dequant convention) and
            quantization_config {quant_method fp8, weight_block_size
            [128, 128]}; the rest as in bf16. fp8 values are the bf16 ones
            rounded to fp8 in their block's scale.

Weights are N(0, 0.02^2) (HF's initializer_range) drawn on the GPU with a
fixed seed, norm weights 1, the correction bias N(0, 0.01^2). A directory
holding a complete checkpoint (its index and every shard it names) is
reused.

Usage: make_deepseek.py --out DIR [--no-fp8]
"""
import argparse
import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

FP8_BLOCK = 128
FP8_MAX = 448.0

CONFIG = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 0,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "routed_scaling_factor": 2.5,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "qk_nope_head_dim": 128,
    "topk_method": "noaux_tc",
    "n_group": 8,
    "topk_group": 4,
    "num_experts_per_tok": 8,
    "moe_layer_freq": 1,
    "first_k_dense_replace": 1,
    "norm_topk_prob": True,
    "scoring_func": "sigmoid",
    "hidden_act": "silu",
    "max_position_embeddings": 163840,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 40.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
    },
    "rope_interleave": True,
    "attention_bias": False,
    "tie_word_embeddings": False,
    "initializer_range": 0.02,
    "torch_dtype": "bfloat16",
    "bos_token_id": 0,
    "eos_token_id": 1,
}

FP8_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [FP8_BLOCK, FP8_BLOCK]}


def tensors():
    """Yield (name, shape, kind) in HF's order; kind: w (linear), n (norm), b (bias)."""
    c = CONFIG
    H, I, MI, E = c["hidden_size"], c["intermediate_size"], c["moe_intermediate_size"], c["n_routed_experts"]
    nh, qk = c["num_attention_heads"], c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
    yield "model.embed_tokens.weight", (c["vocab_size"], H), "w"
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (H,), "n"
        a = p + "self_attn."
        yield a + "q_a_proj.weight", (c["q_lora_rank"], H), "w"
        yield a + "q_a_layernorm.weight", (c["q_lora_rank"],), "n"
        yield a + "q_b_proj.weight", (nh * qk, c["q_lora_rank"]), "w"
        yield a + "kv_a_proj_with_mqa.weight", (c["kv_lora_rank"] + c["qk_rope_head_dim"], H), "w"
        yield a + "kv_a_layernorm.weight", (c["kv_lora_rank"],), "n"
        yield a + "kv_b_proj.weight", (nh * (c["qk_nope_head_dim"] + c["v_head_dim"]), c["kv_lora_rank"]), "w"
        yield a + "o_proj.weight", (H, nh * c["v_head_dim"]), "w"
        yield p + "post_attention_layernorm.weight", (H,), "n"
        m = p + "mlp."
        if i < c["first_k_dense_replace"]:
            yield m + "gate_proj.weight", (I, H), "w"
            yield m + "up_proj.weight", (I, H), "w"
            yield m + "down_proj.weight", (H, I), "w"
            continue
        yield m + "gate.weight", (E, H), "w"
        yield m + "gate.e_score_correction_bias", (E,), "b"
        for e in range(E):
            x = f"{m}experts.{e}."
            yield x + "gate_proj.weight", (MI, H), "w"
            yield x + "up_proj.weight", (MI, H), "w"
            yield x + "down_proj.weight", (H, MI), "w"
        S = MI * c["n_shared_experts"]
        yield m + "shared_experts.gate_proj.weight", (S, H), "w"
        yield m + "shared_experts.up_proj.weight", (S, H), "w"
        yield m + "shared_experts.down_proj.weight", (H, S), "w"
    yield "model.norm.weight", (H,), "n"
    yield "lm_head.weight", (c["vocab_size"], H), "w"


def is_fp8(name, shape):
    """The weights DeepSeek-V3's release stores as fp8: the decoder layers'
    linear weights except the router gate."""
    return name.startswith("model.layers.") and len(shape) == 2 and not name.endswith("mlp.gate.weight")


def quantize(w):
    """Block fp8 of a 2-D bf16 weight on the GPU: (q float8_e4m3fn, scale_inv f32)."""
    out_dim, in_dim = w.shape
    bo, bi = -(-out_dim // FP8_BLOCK), -(-in_dim // FP8_BLOCK)
    pad = torch.zeros(bo * FP8_BLOCK, bi * FP8_BLOCK, dtype=torch.float32, device=w.device)
    pad[:out_dim, :in_dim] = w.float()
    blocks = pad.view(bo, FP8_BLOCK, bi, FP8_BLOCK)
    amax = blocks.abs().amax(dim=(1, 3))
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    q = (blocks / scale[:, None, :, None]).view(bo * FP8_BLOCK, bi * FP8_BLOCK)[:out_dim, :in_dim]
    return q.to(torch.float8_e4m3fn).contiguous(), scale.contiguous()


def complete(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if not (os.path.isfile(idx) and os.path.isfile(os.path.join(d, "config.json"))):
        return False
    with open(idx) as f:
        shards = set(json.load(f)["weight_map"].values())
    return all(os.path.isfile(os.path.join(d, s)) for s in shards)


class Writer:
    """Shards of at most limit bytes, named model-0000N-of-0000M as HF's save_pretrained does."""

    def __init__(self, out, config, limit=5 << 30):
        self.out, self.config, self.limit = out, config, limit
        self.tmp = out + ".partial"
        os.makedirs(self.tmp, exist_ok=True)
        self.cur, self.size, self.n, self.map, self.total = {}, 0, 0, {}, 0

    def add(self, name, t):
        nbytes = t.numel() * t.element_size()
        if self.cur and self.size + nbytes > self.limit:
            self.flush()
        self.cur[name] = t
        self.size += nbytes
        self.total += nbytes

    def flush(self):
        if not self.cur:
            return
        self.n += 1
        fn = f"shard-{self.n:05d}.safetensors"
        save_file(self.cur, os.path.join(self.tmp, fn), metadata={"format": "pt"})
        for k in self.cur:
            self.map[k] = fn
        self.cur, self.size = {}, 0

    def close(self):
        self.flush()
        n = self.n
        rename = {f"shard-{i:05d}.safetensors": f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)}
        for a, b in rename.items():
            os.replace(os.path.join(self.tmp, a), os.path.join(self.tmp, b))
        index = {"metadata": {"total_size": self.total}, "weight_map": {k: rename[v] for k, v in self.map.items()}}
        with open(os.path.join(self.tmp, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=1)
        with open(os.path.join(self.tmp, "config.json"), "w") as f:
            json.dump(self.config, f, indent=1)
        if os.path.isdir(self.out):
            for fn in os.listdir(self.out):
                os.remove(os.path.join(self.out, fn))
            os.rmdir(self.out)
        os.replace(self.tmp, self.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--no-fp8", action="store_true")
    args = ap.parse_args()
    bf_dir, f8_dir = os.path.join(args.out, "bf16"), os.path.join(args.out, "fp8")
    want_fp8 = not args.no_fp8
    if complete(bf_dir) and (not want_fp8 or complete(f8_dir)):
        print(f"make_deepseek: reusing {args.out}")
        return
    t0 = time.time()
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    bf = Writer(bf_dir, CONFIG)
    f8 = Writer(f8_dir, dict(CONFIG, quantization_config=FP8_CONFIG)) if want_fp8 else None
    n_params = 0
    for name, shape, kind in tensors():
        if kind == "n":
            t = torch.ones(shape, dtype=torch.bfloat16, device=dev)
        elif kind == "b":
            t = torch.randn(shape, dtype=torch.float32, device=dev) * 0.01
        else:
            t = (torch.randn(shape, dtype=torch.float32, device=dev) * 0.02).to(torch.bfloat16)
        n_params += t.numel()
        bf.add(name, t.cpu())
        if f8 is not None:
            if is_fp8(name, shape):
                q, s = quantize(t)
                f8.add(name, q.cpu())
                f8.add(name[: -len("weight")] + "weight_scale_inv", s.cpu())
            else:
                f8.add(name, t.cpu())
    bf.close()
    if f8 is not None:
        f8.close()
    print(f"make_deepseek: {n_params / 1e9:.2f} B parameters, bf16 {bf.total / 1e9:.1f} GB"
          + (f", fp8 {f8.total / 1e9:.1f} GB" if f8 else "") + f" in {time.time() - t0:.0f} s -> {args.out}")


if __name__ == "__main__":
    sys.exit(main())
