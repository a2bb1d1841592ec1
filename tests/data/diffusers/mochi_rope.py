#!/usr/bin/env python3
"""Mochi's learned RoPE (`MochiRoPE`), run by diffusers on the CPU, for tests/rope_axes/learned.rs.

Run:    python3 tests/data/diffusers/mochi_rope.py > tests/data/diffusers/mochi_rope.json
Needs:  torch (CPU), diffusers.

MochiTransformer3DModel holds `pos_frequencies` `[3, heads, head_dim / 2]` (a learned
parameter; the class initializes it to zeros, a checkpoint holds the trained values) and
passes it to `MochiRoPE`, which makes the positions of a latent grid itself (frames, then
rows and columns centered and scaled to a 192 x 192 target area: fractional f32) and returns
cos and sin of `einsum("nd,dhf->nhf", pos, freqs)`. The table here is the published
config's shape (24 heads of 128), filled as RoPE-Mixed initializes such tables (timm
`RotaryEmbeddingMixed`, seed 0): pair k of each head gets 10000^(-2k/128) times a random unit
direction in (t, h, w), in float32. The module runs on a 5 x 24 x 40 grid (a 480 x 848 video's
latent after 2 x 2 patches is 30 x 53; a smaller one keeps the file small), and for 16 sampled
tokens (random.Random("mochi-rope"), first and last included) the positions it made and the
cos and sin `[heads, pairs]` are recorded. Floats are float32 values written as the shortest
decimal that reads back to the same float32.

Output (stdout, JSON): {"generator", "diffusers", "torch", "grid", "heads", "head_dim",
"pos_frequencies", "tokens", "positions", "cos", "sin"}; and the table as the checkpoint
holds it, `mochi_pos_frequencies.safetensors` beside this script: the transformer's own
parameter name (`pos_frequencies`, a top-level parameter of `MochiTransformer3DModel`),
float32, written by `safetensors.torch.save_file` (the published checkpoint's format; the
other 10B weights left out).
"""

import json
import math
import random
import sys

import pathlib

import diffusers
import numpy as np
import torch
from diffusers.models.transformers.transformer_mochi import MochiRoPE, MochiTransformer3DModel


def f32(x):
    """A float32 tensor as nested lists of the shortest decimals that read back exactly."""
    a = x.detach().to(torch.float32).numpy()
    if a.ndim == 1:
        return [float(str(v)) for v in a]
    return [f32(t) for t in x]


def main():
    with torch.device("meta"):
        model = MochiTransformer3DModel()
    heads, head_dim = model.config.num_attention_heads, model.config.attention_head_dim
    shape = tuple(model.pos_frequencies.shape)
    assert shape == (3, heads, head_dim // 2), shape
    torch.manual_seed(0)
    direction = torch.randn(heads, head_dim // 2, 3, dtype=torch.float64)
    direction /= direction.norm(dim=-1, keepdim=True)
    magnitude = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    table = (direction * magnitude[None, :, None]).permute(2, 0, 1).to(torch.float32).contiguous()
    f, h, w = 5, 24, 40
    rope = MochiRoPE()
    cos, sin = rope(table, f, h, w, device=torch.device("cpu"), dtype=torch.float32)
    positions = rope._get_positions(f, h, w, device=torch.device("cpu"), dtype=torch.float32)
    n = f * h * w
    assert cos.shape == (n, heads, head_dim // 2), cos.shape
    # float64 check of the stated form.
    angles = torch.einsum("nd,dhf->nhf", positions.double(), table.double())
    assert (angles.cos() - cos.double()).abs().max().item() < 1e-3
    rng = random.Random("mochi-rope")
    tokens = sorted({0, n - 1} | {rng.randrange(n) for _ in range(14)})
    out = dict(generator="tests/data/diffusers/mochi_rope.py", diffusers=diffusers.__version__,
               torch=torch.__version__, grid=[f, h, w], heads=heads, head_dim=head_dim,
               pos_frequencies=f32(table), tokens=tokens,
               positions=[f32(positions[t]) for t in tokens],
               cos=[f32(cos[t]) for t in tokens], sin=[f32(sin[t]) for t in tokens])
    assert "pos_frequencies" in dict(model.named_parameters())
    from safetensors.torch import save_file
    save_file({"pos_frequencies": table}, str(pathlib.Path(__file__).with_name(
        "mochi_pos_frequencies.safetensors")))
    json.dump(out, sys.stdout, separators=(",", ":"))
    print(f"{n} tokens, {len(tokens)} sampled, table {list(shape)}", file=sys.stderr)


if __name__ == "__main__":
    main()
