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

With --hsdb-topk (hsdb's expert ids for each sequence's last token at
every router, the benchmark's hsdb_topk.json) it also prints, per MoE
layer and sequence, whether HF routes that token to the same experts, and
reruns HF with the routing of those tokens set to hsdb's ids (the weights
recomputed from HF's own router scores, as its gate does): the cosine of
the last-token logits apart from a routing decision the two roundings take
differently. With --ref-f32 as well, the float32 run's ids for those
tokens and its routing margin (the smaller of the 4th-5th group-score gap
and the 8th-9th expert-score gap, scores with the correction bias, as
DeepSeek-V3's noaux_tc selects): which bf16 run routes as exact
arithmetic does, and how near the tie was.

Usage: hf_prefill.py --model DIR --ids ids.json [--hsdb-logits F] [--hsdb-topk F] [--iters N] [--warm-s S] [--ref-f32]
"""
import argparse
import json
import time

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM


def load(path, dtype=torch.bfloat16):
    kw = dict(attn_implementation="sdpa")
    try:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, device_map="cuda", **kw)
    except Exception as e:  # older transformers (torch_dtype) or no accelerate for device_map
        print(f"hf_prefill: from_pretrained(dtype=, device_map=) failed ({e}); loading on the CPU, then .to(cuda)")
        m = AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kw).to("cuda")
    return m.eval()


def routers(model):
    """The MoE layers' routers: {"model.layers.N.mlp.gate": (mlp, gate)}
    for every decoder layer whose mlp has a gate with DeepSeek-V3's
    e_score_correction_bias (noaux_tc)."""
    out = {}
    for i, layer in enumerate(model.model.layers):
        mlp = getattr(layer, "mlp", None)
        g = getattr(mlp, "gate", None)
        if g is not None and hasattr(g, "e_score_correction_bias"):
            out[f"model.layers.{i}.mlp.gate"] = (mlp, g)
    return out


def select(cfg, scores, bias):
    """DeepSeek-V3's noaux_tc choice on scores [rows, E] (sigmoid of the
    router logits, float32), as HF's DeepseekV3TopkRouter.get_topk_indices:
    returns the ids [rows, top_k] (sorted) and each row's margin (the
    smaller of the gap between the topk_group-th and next group score and
    the gap between the top_k-th and next expert score among the chosen
    groups)."""
    e, ng, tg, k = cfg.n_routed_experts, cfg.n_group, cfg.topk_group, cfg.num_experts_per_tok
    choice = scores + bias.float().unsqueeze(0)
    gs = choice.view(-1, ng, e // ng).topk(2, dim=-1)[0].sum(-1)
    gsorted = gs.sort(dim=-1, descending=True)[0]
    gmargin = (gsorted[:, tg - 1] - gsorted[:, tg]) if tg < ng else torch.full_like(gsorted[:, 0], float("inf"))
    gidx = gs.topk(tg, dim=-1)[1]
    mask = torch.zeros_like(gs).scatter_(1, gidx, 1).bool().unsqueeze(-1).expand(-1, ng, e // ng).reshape(-1, e)
    masked = choice.masked_fill(~mask, float("-inf"))
    top = masked.topk(k + 1, dim=-1)
    emargin = top[0][:, k - 1] - top[0][:, k]
    return top[1][:, :k].sort(dim=-1)[0], torch.minimum(gmargin, emargin)


def gate_parts(output, tokens, cfg):
    """Where a router's output holds what it chose: (i_ids, i_weights), the
    positions in the tuple of the integer [tokens, top_k] ids and the float
    [tokens, top_k] weights, or None for another layout (a bare tensor of
    logits). transformers' DeepseekV3TopkRouter has returned (ids, weights)
    and, later, the logits first as well: found by shape and dtype, not by
    position."""
    if not isinstance(output, tuple):
        return None
    k, ii, iw = cfg.num_experts_per_tok, None, None
    for i, t in enumerate(output):
        if torch.is_tensor(t) and t.dim() == 2 and t.shape == (tokens, k):
            if t.is_floating_point():
                iw = i if iw is None else iw
            else:
                ii = i if ii is None else ii
    return (ii, iw) if ii is not None and iw is not None else None


def describe(output):
    if torch.is_tensor(output):
        return f"tensor {tuple(output.shape)} {output.dtype}"
    if isinstance(output, tuple):
        return "(" + ", ".join(describe(t) if torch.is_tensor(t) else type(t).__name__ for t in output) + ")"
    return type(output).__name__


class LastRoutes:
    """Forward hooks on every router that note, for the last token of each
    sequence (rows seq_len-1, 2·seq_len-1, ... of the flattened batch),
    the expert ids HF chose and the margin (select() on the scores
    recomputed in float32 from the gate's input, as the gate computes
    them); with force (site -> [sequence][top_k] ids), those rows' routing
    is replaced by the given ids, their weights recomputed from those
    scores in the form the gate gives its own (gathered; normalised if
    norm_topk_prob and times routed_scaling_factor where the gate does so).
    Handles a gate returning a tuple that holds the ids and weights
    (gate_parts), or one returning the logits with the MoE's
    route_tokens_to_experts choosing."""

    def __init__(self, model, seqs, seq_len, force=None):
        self.cfg = model.config
        self.rows = torch.tensor([(s + 1) * seq_len - 1 for s in range(seqs)], device="cuda")
        self.ids, self.margin, self.forced, self.handles, self.layout = {}, {}, {}, [], None
        for site, (mlp, g) in routers(model).items():
            self.handles.append(g.register_forward_hook(self._hook(site, mlp, g, force)))

    def _weights(self, scores, ids, dtype):
        w = scores.gather(1, ids)
        if getattr(self.cfg, "norm_topk_prob", True):
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return (w * self.cfg.routed_scaling_factor).to(dtype)

    def _hook(self, site, mlp, g, force):
        def hook(module, args, output):
            h = args[0].reshape(-1, self.cfg.hidden_size)
            scores = F.linear(h[self.rows].float(), g.weight.float()).sigmoid()
            ids, margin = select(self.cfg, scores, g.e_score_correction_bias)
            parts = gate_parts(output, h.shape[0], self.cfg)
            self.layout = describe(output)
            if parts:  # HF's own choice, not a recomputation of it
                ids = output[parts[0]][self.rows].sort(dim=-1)[0]
            self.ids[site], self.margin[site] = ids.tolist(), margin.tolist()
            if not force or site not in force:
                return None
            want = torch.tensor(force[site], device="cuda", dtype=torch.long)
            if parts:
                out = list(output)
                idx, w = out[parts[0]].clone(), out[parts[1]].clone()
                # The gate's weights as they come: the scores at its ids,
                # or those normalised and scaled (older releases); the
                # forced ones alike.
                mine = scores.gather(1, idx[self.rows].long())
                raw = torch.allclose(w[self.rows].float(), mine, rtol=1e-3, atol=1e-6)
                idx[self.rows] = want.to(idx.dtype)
                w[self.rows] = scores.gather(1, want).to(w.dtype) if raw else self._weights(scores, want, w.dtype)
                out[parts[0]], out[parts[1]] = idx, w
                self.forced[site] = "gate"
                return tuple(out)
            if torch.is_tensor(output) and hasattr(mlp, "route_tokens_to_experts"):
                orig, rows, outer = mlp.route_tokens_to_experts, self.rows, self

                def route(router_logits, *a, **kw):
                    idx, w = orig(router_logits, *a, **kw)
                    idx, w = idx.clone(), w.clone()
                    idx[rows] = want.to(idx.dtype)
                    w[rows] = outer._weights(router_logits[rows].float().sigmoid(), want, w.dtype)
                    del mlp.route_tokens_to_experts  # once, for this forward: the class's method again
                    return idx, w

                mlp.route_tokens_to_experts = route
                self.forced[site] = "route_tokens_to_experts"
            return None
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()


def same(a, b):
    return "same" if a == b else f"differs ({len(set(a) ^ set(b)) // 2} of {len(a)})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--hsdb-logits")
    ap.add_argument("--hsdb-topk")
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
    hsdb_topk = None
    if args.hsdb_topk:
        with open(args.hsdb_topk) as f:
            hsdb_topk = {k: [sorted(r) for r in v] for k, v in json.load(f).items()}
        seqs, seq_len = ids.shape
        with torch.inference_mode():
            lr = LastRoutes(model, seqs, seq_len)
            step()
            lr.remove()
            hf_ids = lr.ids
            fr = LastRoutes(model, seqs, seq_len, force=hsdb_topk)
            forced = step()
            fr.remove()
        routes = {}
        for site, want in hsdb_topk.items():
            got = hf_ids.get(site)
            if got is None:
                print(f"routing: HF has no router at {site}")
                continue
            routes[site] = [a == b for a, b in zip(want, got)]
            print(f"last-token routing at {site}, hsdb vs HF bf16, per sequence: " + ", ".join(same(a, b) for a, b in zip(want, got)))
        res.update(route_same_hf_bf16=routes)
        if args.hsdb_logits and fr.forced and len(fr.forced) == len(hsdb_topk):
            c_f = torch.nn.functional.cosine_similarity(h, forced, dim=-1)
            top_f = (h.argmax(-1) == forced.argmax(-1)).float().mean().item()
            res.update(forced_cos=c_f.tolist(), forced_cos_min=c_f.min().item(), forced_top1_agree=top_f)
            print("last-token logits hsdb vs HF bf16 with HF's routing of those tokens set to hsdb's ids: cosine per sequence "
                  + " ".join(f"{c:.6f}" for c in c_f.tolist()) + f", top-1 agreement {top_f:.2f}")
        elif args.hsdb_logits:
            print(f"routing not forced at every router (forced: {sorted(fr.forced)}): the router returns {fr.layout}, a layout LastRoutes does not know")
    if args.ref_f32:
        del model
        torch.cuda.empty_cache()
        model = load(args.model, torch.float32)
        with torch.inference_mode():
            lr = LastRoutes(model, *ids.shape) if hsdb_topk else None
            out = model(input_ids=ids, use_cache=False, logits_to_keep=1)
            ref = out.logits[:, -1, :].float()
            if lr:
                lr.remove()
                for site, want in hsdb_topk.items():
                    if site not in lr.ids:
                        continue
                    f32, m = lr.ids[site], lr.margin[site]
                    res.setdefault("f32_routes", {})[site] = {"hsdb_same": [a == b for a, b in zip(want, f32)],
                                                              "hf_bf16_same": [a == b for a, b in zip(hf_ids.get(site, []), f32)],
                                                              "margin": m}
                    print(f"last-token routing at {site} vs HF f32, per sequence: hsdb "
                          + ", ".join(same(a, b) for a, b in zip(want, f32)) + "; HF bf16 "
                          + ", ".join(same(a, b) for a, b in zip(hf_ids.get(site, []), f32))
                          + "; f32 margin " + " ".join(f"{x:.2e}" for x in m))
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
