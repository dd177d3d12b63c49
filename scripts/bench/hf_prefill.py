#!/usr/bin/env python3
"""Time HF transformers' prefill of the token ids hsdb's benchmark used
(scripts/bench-gpu.sh): LlamaForCausalLM in bf16 with
attn_implementation="sdpa" on cuda:0, 4 sequences of 1024 tokens as one
[4, 1024] batch, logits of the last token only (logits_to_keep=1, as hsdb
computes them), no KV cache. Prints tokens/s (and, informative, the time
per prefill when each one's logits are copied to the host before the next
starts, as hsdb's benchmark times its own), and the agreement of its last-
token logits with hsdb's (cosine, max |diff|), then one JSON line.

With --ref-f32 it then reloads the model in float32 and prints, per
sequence, the cosine of hsdb's and HF bf16's last-token logits against the
float32 ones: how far each bf16 run is from the exact computation.

Usage: hf_prefill.py --model DIR --ids ids.json [--hsdb-logits F] [--iters N] [--warm-s S] [--ref-f32]
"""
import argparse
import json
import time

import numpy as np
import torch
from transformers import AutoModelForCausalLM


def load(path, dtype=torch.bfloat16):
    kw = dict(attn_implementation="sdpa")
    try:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, device_map="cuda", **kw)
    except Exception as e:  # older transformers (torch_dtype) or no accelerate for device_map
        print(f"hf_prefill: from_pretrained(dtype=, device_map=) failed ({e}); loading on the CPU, then .to(cuda)")
        m = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kw).to("cuda")
    return m.eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--hsdb-logits")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--ref-f32", action="store_true")
    ap.add_argument("--warm-s", type=float, default=1.0,
                    help="seconds of prefills before timing (an H200 at its power limit settles its clock), as hsdb's HSDB_BENCH_WARM_S")
    args = ap.parse_args()
    t0 = time.time()
    model = load(args.model)
    load_s = time.time() - t0
    with open(args.ids) as f:
        ids = torch.tensor(json.load(f), dtype=torch.long, device="cuda")
    tokens = ids.numel()

    def step():
        out = model(input_ids=ids, use_cache=False, logits_to_keep=1)
        return out.logits[:, -1, :].float()

    with torch.inference_mode():
        for _ in range(2):
            logits = step()
        torch.cuda.synchronize()
        w0 = time.time()
        while time.time() - w0 < args.warm_s:
            logits = step()
            torch.cuda.synchronize()
        t1 = time.time()
        for _ in range(args.iters):
            logits = step()
        torch.cuda.synchronize()
        dt = (time.time() - t1) / args.iters
        # The same prefills as hsdb's benchmark times them: each one's
        # last-token logits copied to the host before the next starts
        # (informative: the headline figure above is the one compared).
        t2 = time.time()
        for _ in range(args.iters):
            step().cpu()
        dt_host = (time.time() - t2) / args.iters
    res = {"hf_tok_s": tokens / dt, "hf_ms": dt * 1e3, "hf_load_s": load_s, "hf_ms_to_host": dt_host * 1e3}
    print(f"HF transformers {torch.__version__} sdpa bf16: {dt * 1e3:.1f} ms per prefill of {tokens} tokens, {tokens / dt:.0f} tok/s (load {load_s:.0f} s)")
    print(f"  with each prefill's last-token logits copied to the host before the next, as hsdb's benchmark times it: {dt_host * 1e3:.1f} ms")
    if args.hsdb_logits:
        h = torch.from_numpy(np.fromfile(args.hsdb_logits, dtype="<f4").reshape(logits.shape)).to("cuda")
        cos = torch.nn.functional.cosine_similarity(h, logits, dim=-1)
        diff = (h - logits).abs().max().item()
        top = (h.argmax(-1) == logits.argmax(-1)).float().mean().item()
        res.update(logits_cos_min=cos.min().item(), logits_maxdiff=diff, top1_agree=top)
        print(f"last-token logits hsdb vs HF: cosine min {cos.min().item():.6f}, max |diff| {diff:.4g}, top-1 agreement {top:.2f}")
        print("  per sequence: " + " ".join(f"{c:.6f}" for c in cos.tolist()))
    if args.ref_f32:
        del model
        torch.cuda.empty_cache()
        model = load(args.model, torch.float32)
        with torch.inference_mode():
            out = model(input_ids=ids, use_cache=False, logits_to_keep=1)
            ref = out.logits[:, -1, :].float()
        c_hf = torch.nn.functional.cosine_similarity(logits, ref, dim=-1)
        res.update(hf_bf16_vs_f32_cos_min=c_hf.min().item(), hf_bf16_vs_f32_cos=c_hf.tolist())
        print("HF bf16 vs HF f32 last-token cosine per sequence: " + " ".join(f"{c:.6f}" for c in c_hf.tolist()))
        if args.hsdb_logits:
            c_h = torch.nn.functional.cosine_similarity(h, ref, dim=-1)
            res.update(hsdb_vs_f32_cos_min=c_h.min().item(), hsdb_vs_f32_cos=c_h.tolist())
            print("hsdb bf16 vs HF f32 last-token cosine per sequence: " + " ".join(f"{c:.6f}" for c in c_h.tolist()))
    print("JSON " + json.dumps(res))


if __name__ == "__main__":
    main()
