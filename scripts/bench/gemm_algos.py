#!/usr/bin/env python3
"""gemm_algos.py: is there a faster cuBLASLt algorithm than cuBLAS's own
choice for the bf16 linears of DeepSeek-V3's prefill (4 x 1024 tokens)?

Times torch.nn.functional.linear (cuBLAS, default algorithm) against the
same GEMM under PyTorch's TunableOp, which times cuBLASLt's candidate
algorithms for each shape and keeps the fastest (or "Default"), after a
second of warm-up (the H200 runs these at its power limit). Prints ms and
TFLOP/s per shape, the ratio, and the solution TunableOp chose. The
answer backs engine/backend/cuda/driver's MatMul taking cuBLAS's default
(CUBLAS_GEMM_DEFAULT) rather than timing algorithms per shape.

    python3 scripts/bench/gemm_algos.py      (on the GPU machine; torch only)
"""
import time

import torch

# (name, tokens M, in K, out N): hsdb's linears of scripts/bench/make_deepseek.py's model
SHAPES = [("fused_qkv_a", 4096, 7168, 2112), ("q_b", 4096, 1536, 24576), ("kv_b", 4096, 512, 32768),
          ("o", 4096, 16384, 7168), ("gate_up", 4096, 7168, 36864), ("down", 4096, 18432, 7168),
          ("shared_gate_up", 4096, 7168, 4096), ("shared_down", 4096, 2048, 7168), ("lm_head", 4, 7168, 129280)]


def median_ms(f, reps=20):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    for i in range(reps):
        ev[i].record()
        f()
        ev[i + 1].record()
    torch.cuda.synchronize()
    ts = sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(reps))
    return ts[len(ts) // 2]


def main():
    torch.manual_seed(0)
    torch.cuda.tunable.write_file_on_exit(False)  # no results file left in the working directory
    ops = [(name, M, K, N, torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
            torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * 0.02) for name, M, K, N in SHAPES]
    t0 = time.time()
    while time.time() - t0 < 1.0:
        for _, _, _, _, x, w in ops[:6]:
            torch.nn.functional.linear(x, w)
    torch.cuda.synchronize()
    best = {}
    for _ in range(2):  # alternate, keep each one's best
        for mode in ("default", "tuned"):
            torch.cuda.tunable.enable(mode == "tuned")
            torch.cuda.tunable.tuning_enable(mode == "tuned")
            for name, M, K, N, x, w in ops:
                ms = median_ms(lambda: torch.nn.functional.linear(x, w))
                best[(name, mode)] = min(best.get((name, mode), ms), ms)
    chosen = {}
    for op, params, solution, _ in torch.cuda.tunable.get_results():
        chosen[params] = solution
    total = {"default": 0.0, "tuned": 0.0}
    for name, M, K, N, _, _ in ops:
        d, t = best[(name, "default")], best[(name, "tuned")]
        total["default"] += d
        total["tuned"] += t
        fl = 2 * M * K * N
        sol = next((v for k, v in chosen.items() if k.startswith(f"tn_{N}_{M}_{K}_")), "?")
        print(f"{name:15s} [{M}, {K}] x [{N}, {K}]T  default {d:.3f} ms {fl / d / 1e9:5.0f} TFLOP/s  "
              f"tuned {t:.3f} ms {fl / t / 1e9:5.0f} TFLOP/s  default/tuned time {d / t:.3f}  chosen: {sol}")
    print(f"sum: default {total['default']:.3f} ms, tuned {total['tuned']:.3f} ms")


if __name__ == "__main__":
    main()
