#!/usr/bin/env python3
"""Check hf_prefill.py's routing hooks (LastRoutes, select, gate_parts)
against the installed transformers before bench-deepseek.sh trusts them:
on a tiny random DeepseekV3ForCausalLM (16 experts in 4 groups, top-4 of 2
groups, a random e_score_correction_bias) on cuda in bf16,
  - select() picks HF's own expert ids on every token;
  - LastRoutes records HF's ids of each sequence's last token;
  - forcing those rows to HF's own ids leaves the logits as they were
    (cosine >= 0.99999: the weights recomputed in the gate's own form),
    forcing them to other ids changes every sequence's (cosine < 0.9999),
    and removing the hooks gives the unforced logits bit for bit.
Exits 1, naming what failed, when this transformers' DeepseekV3 router
has a layout the hooks do not handle.

Usage: check_hf_routes.py
"""
import os
import sys

import torch
from transformers import AutoModelForCausalLM, DeepseekV3Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_prefill as hp  # noqa: E402


def fail(msg):
    print(f"check_hf_routes: FAIL: {msg}")
    sys.exit(1)


def main():
    torch.manual_seed(0)
    cfg = DeepseekV3Config(vocab_size=100, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                           num_hidden_layers=2, first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4,
                           n_routed_experts=16, n_shared_experts=1, num_experts_per_tok=4, n_group=4, topk_group=2,
                           q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                           routed_scaling_factor=2.5, norm_topk_prob=True, max_position_embeddings=64)
    m = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to("cuda", torch.bfloat16).eval()
    rs = hp.routers(m)
    if len(rs) != 1:
        fail(f"found {len(rs)} routers, want 1 (layer 1)")
    (site, (mlp, g)), = rs.items()
    g.e_score_correction_bias.normal_(0, 0.1)
    seqs, seq_len = 3, 20
    ids = torch.randint(0, 100, (seqs, seq_len), device="cuda")

    def step():
        return m(input_ids=ids, use_cache=False, logits_to_keep=1).logits[:, -1, :].float()

    cos = torch.nn.functional.cosine_similarity
    with torch.inference_mode():
        seen = {}
        h = g.register_forward_hook(lambda mod, a, out: seen.update(out=out, x=a[0]))
        base = step()
        h.remove()
        out, x = seen["out"], seen["x"].reshape(-1, cfg.hidden_size)
        print(f"router {type(g).__name__} returns {hp.describe(out)}")
        parts = hp.gate_parts(out, x.shape[0], cfg)
        if parts:
            hf = out[parts[0]].sort(-1)[0]
        elif hasattr(mlp, "route_tokens_to_experts"):
            hf = mlp.route_tokens_to_experts(out)[0].sort(-1)[0]
        else:
            fail(f"the router returns {hp.describe(out)} and the MoE has no route_tokens_to_experts")
        scores = torch.nn.functional.linear(x.float(), g.weight.float()).sigmoid()
        mine, _ = hp.select(cfg, scores, g.e_score_correction_bias)
        if not torch.equal(mine, hf):
            fail(f"select() differs from HF's choice on {(mine != hf).any(-1).sum().item()} of {hf.shape[0]} tokens")
        lr = hp.LastRoutes(m, seqs, seq_len)
        step()
        lr.remove()
        last = hf[[(s + 1) * seq_len - 1 for s in range(seqs)]].tolist()
        if lr.ids.get(site) != last:
            fail(f"LastRoutes recorded {lr.ids.get(site)}, HF chose {last}")
        fr = hp.LastRoutes(m, seqs, seq_len, force={site: last})
        same = step()
        fr.remove()
        c = cos(same, base, dim=-1)
        if site not in fr.forced or not bool((c >= 0.99999).all()):
            fail(f"forced to HF's own ids (via {fr.forced}): cosine {c.tolist()}, want >= 0.99999")
        other = [[(e + 1) % cfg.n_routed_experts for e in r] for r in last]
        fr = hp.LastRoutes(m, seqs, seq_len, force={site: other})
        moved = step()
        fr.remove()
        c2 = cos(moved, base, dim=-1)
        if not bool((c2 < 0.9999).all()):
            fail(f"forced to other ids: cosine {c2.tolist()}, want every sequence's < 0.9999 (the forcing did not take)")
        if not torch.equal(step(), base):
            fail("after the hooks were removed the logits differ from the unforced run")
    print(f"check_hf_routes: OK (forced via {fr.forced[site]}; own ids cosine min {c.min().item():.7f}, other ids max {c2.max().item():.5f})")


if __name__ == "__main__":
    main()
