#!/usr/bin/env python3
"""gemm_merge.py: would one GEMM over concatenated weights (vLLM's merged
layers: gate_up_proj, fused_qkv_a_proj) beat one GEMM per HF weight for
DeepSeek-V3's linears that share an input (4 x 1024 tokens, bf16)?

Times torch.nn.functional.linear (cuBLAS) on each weight in turn against
one call on their concatenation, median of five timings of 60 calls after
10 of warm-up, and prints both and the difference. The answer backs
engine/nn's Linear keeping each weight its own matrix and GEMM.

    python3 scripts/bench/gemm_merge.py      (on the GPU machine; torch only)
"""
import torch

M, H = 4096, 7168  # tokens, hidden_size
# (name, output rows of each weight on the same input)
GROUPS = [("dense gate/up", [18432, 18432]), ("shared gate/up", [2048, 2048]), ("q_a/kv_a", [1536, 576])]


def timed(fn, reps=60):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(5):
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        torch.cuda.synchronize()
        ms.append(s.elapsed_time(e) / reps)
    return sorted(ms)[len(ms) // 2]


def main():
    torch.manual_seed(0)
    x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
    for name, outs in GROUPS:
        ws = [torch.randn(n, H, device="cuda", dtype=torch.bfloat16) * 0.02 for n in outs]
        wm = torch.cat(ws, 0)
        apart = timed(lambda: [torch.nn.functional.linear(x, w) for w in ws])
        merged = timed(lambda: torch.nn.functional.linear(x, wm))
        print(f"{name}: separate {apart:.3f} ms, merged {merged:.3f} ms, saves {apart - merged:.3f}")


if __name__ == "__main__":
    main()
