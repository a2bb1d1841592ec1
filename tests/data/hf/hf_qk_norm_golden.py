#!/usr/bin/env python3
"""QK-norm + RoPE golden data from HF transformers' own modules, for the fused QKV call.

Run (from the repository root, with the venv of hf_rope_golden.py):

    /tmp/hfenv/bin/python tests/data/hf/hf_qk_norm_golden.py > tests/data/hf/hf_qk_norm_golden.json

For Qwen3 (`configs/qwen3-8b.json`: `Qwen3RMSNorm`, `x * w`) and Gemma 3
(`configs/gemma-3-1b-it.json`: `Gemma3RMSNorm`, `x * (1 + w)`, both layer types), it loads the
fixture as a user's `from_pretrained` does, builds the attention's `q_norm` / `k_norm` modules
(head_dim wide, eps = the config's `rms_norm_eps`) with fixed weights, the family's rotary
module, and applies, as the attention's forward does,
`apply_rotary_pos_emb(q_norm(q), k_norm(k), cos, sin)` to random q `[1, 3, S, D]` and k
`[1, 1, S, D]` at positions up to 100 000. Weights and inputs are float32 values (so the Rust
side feeds the same); HF's code runs in float64 (`float64_mode` of hf_rope_golden.py, which
redirects its hard-coded float32), so `q_out` / `k_out` are HF's algorithm in binary64.
"""

import json
import math
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_rope_golden as g  # noqa: E402

POSITIONS = [0, 1, 2, 5, 100, 4096, 32768, 100000]
Q_HEADS, KV_HEADS = 3, 1

CASES = [
    ("configs/qwen3-8b.json", "qwen3", "Qwen3RMSNorm", "Qwen3RotaryEmbedding", None, "Scale"),
    ("configs/gemma-3-1b-it.json", "gemma3", "Gemma3RMSNorm", "Gemma3RotaryEmbedding",
     "sliding_attention", "OnePlus"),
    ("configs/gemma-3-1b-it.json", "gemma3", "Gemma3RMSNorm", "Gemma3RotaryEmbedding",
     "full_attention", "OnePlus"),
]


def f32(t):
    return t.to(torch.float32).to(torch.float64)


def main():
    gen = torch.Generator().manual_seed(20261201)
    out = []
    for path, family, norm_cls, rot_cls, layer_type, kind in CASES:
        _, cfg = g.load_config(path)
        d = cfg.head_dim
        eps = cfg.rms_norm_eps
        n = len(POSITIONS)
        q = f32(torch.randn(1, Q_HEADS, n, d, generator=gen, dtype=torch.float64))
        k = f32(torch.randn(1, KV_HEADS, n, d, generator=gen, dtype=torch.float64))
        wq = f32(torch.tensor([0.5 + math.sin(0.37 * i) for i in range(d)], dtype=torch.float64))
        wk = f32(torch.tensor([0.25 * math.cos(1.3 * i) for i in range(d)], dtype=torch.float64))
        m = g.modeling(family)
        with g.float64_mode():
            q_norm = getattr(m, norm_cls)(d, eps=eps)
            k_norm = getattr(m, norm_cls)(d, eps=eps)
            with torch.no_grad():
                q_norm.weight.copy_(wq)
                k_norm.weight.copy_(wk)
            rot = getattr(m, rot_cls)(cfg)
            pos = torch.tensor([POSITIONS], dtype=torch.int64)
            cos, sin = rot(q, pos) if layer_type is None else rot(q, pos, layer_type)
            with torch.no_grad():
                q_out, k_out = m.apply_rotary_pos_emb(q_norm(q), k_norm(k), cos, sin)
        out.append({
            "config": path,
            "layer_type": layer_type,
            "norm": f"{family}.{norm_cls}",
            "weight": kind,
            "head_dim": d,
            "eps": eps,
            "q_heads": Q_HEADS,
            "kv_heads": KV_HEADS,
            "positions": POSITIONS,
            "q_weight": wq.tolist(),
            "k_weight": wk.tolist(),
            "q": q[0].tolist(),
            "k": k[0].tolist(),
            "q_out": q_out[0].to(torch.float64).tolist(),
            "k_out": k_out[0].to(torch.float64).tolist(),
        })
    json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
               "cases": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
