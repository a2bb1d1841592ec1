#!/usr/bin/env python3
"""A cos/sin cache as HF transformers' own rotary modules build it, for the cache convention of
wgpu-posenc (`RopeCall::with_cache`): HF's `rotary_emb(x, position_ids)` returns cos and sin
already multiplied by the attention scaling (YaRN: 0.1 ln(factor) + 1; LongRoPE:
sqrt(1 + ln(factor) / ln(original))), and `apply_rotary_pos_emb` uses them as they are.

Run (from the repository root, with the venv of hf_rope_golden.py):

    /tmp/hfenv/bin/python tests/data/hf/hf_cos_sin_cache.py > tests/data/hf/hf_cos_sin_cache.json

For Qwen2.5-7B-Instruct with its card's YaRN block and Phi-3-mini-128k (LongRoPE, short
factors below 4096), positions 0..63: the module's float32 `cos`, `sin` (as HF computes them:
this is the cache a user would take from HF), the halves `[..., :r/2]` (HF's cos/sin repeat
the r/2 values twice for rotate_half), the fixed input `q[i, k] = sin(0.37 k + 0.11 i + 1)`
(float32) at ids `ID_FORMULA`, and HF's `apply_rotary_pos_emb` of it with those cos/sin.
"""

import json
import math
import os
import shutil
import sys
import tempfile
import warnings

import torch
import transformers
from transformers import AutoConfig
from transformers.models.phi3 import modeling_phi3
from transformers.models.qwen2 import modeling_qwen2

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_POS = 64
IDS = [(i * 7 + 3) % MAX_POS for i in range(16)]


def load(path):
    folder = tempfile.mkdtemp()
    try:
        shutil.copy(os.path.join(HERE, path), os.path.join(folder, "config.json"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return AutoConfig.from_pretrained(folder).get_text_config()
    finally:
        shutil.rmtree(folder)


def case(name, path, module, cls):
    cfg = load(path)
    rot = getattr(module, cls)(cfg)
    x = torch.zeros(1, 1, MAX_POS, 4, dtype=torch.float32)
    cos, sin = rot(x, torch.arange(MAX_POS)[None])
    cos, sin = cos[0], sin[0]  # [MAX_POS, r]
    r = cos.shape[-1]
    q = torch.tensor([[math.sin(0.37 * k + 0.11 * i + 1.0) for k in range(r)]
                      for i in range(len(IDS))], dtype=torch.float32)[None, None]
    ids = torch.tensor(IDS)
    out, _ = module.apply_rotary_pos_emb(q, q.clone(), cos[ids][None], sin[ids][None])
    return {
        "name": name, "config": path, "rotary_dim": r, "max_pos": MAX_POS,
        "attention_scaling": float(rot.attention_scaling),
        "cos": cos[:, : r // 2].tolist(), "sin": sin[:, : r // 2].tolist(),
        "ids": IDS, "input": q[0, 0].tolist(), "output": out[0, 0].tolist(),
    }


def main():
    doc = {
        "transformers": transformers.__version__, "torch": torch.__version__,
        "generator": "tests/data/hf/hf_cos_sin_cache.py",
        "cases": [
            case("qwen2.5-7b-instruct-yarn", "configs/qwen2.5-7b-instruct-yarn.json",
                 modeling_qwen2, "Qwen2RotaryEmbedding"),
            case("phi-3-mini-128k-instruct", "configs/phi-3-mini-128k-instruct.json",
                 modeling_phi3, "Phi3RotaryEmbedding"),
        ],
    }
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
