#!/usr/bin/env python3
"""RoPE over three position axes, as diffusers' FLUX.1 and Wan 2.1 transformers rotate.

Run:    python3 tests/data/diffusers/rope_axes.py > tests/data/diffusers/rope_axes.json
Needs:  torch (CPU), diffusers.

Each case takes its rotary module and positions from diffusers' own code:
  - FLUX.1: `FluxPosEmbed(theta, axes_dims_rope)` with the transformer's default config
    (10 000, (16, 56, 56)); the positions are the pipeline's own ids
    (`FluxPipeline._prepare_latent_image_ids` for a 1024 x 1024 image, 64 x 64 tokens, after
    512 text ids of zeros, text first as the transformer concatenates them);
  - Wan 2.1: `WanRotaryPosEmbed(attention_head_dim, patch_size, rope_max_seq_len)` with the
    transformer's default config (128, (1, 2, 2), 1024), its `forward` on a 480 x 832,
    21-latent-frame video (21 x 30 x 52 = 32 760 tokens; the grid's (frame, row, column)
    indices are the positions).
  - HunyuanVideo: `HunyuanVideoRotaryPosEmbed` (default config: (16, 56, 56), theta 256) on a
    480 x 848, 61-frame video (16 x 30 x 53 = 25 440 tokens, (frame, row, column));
  - Qwen-Image: see `qwen_image` (centered rows and columns: negative positions; text on
    the diagonal), the full positions written (`all_positions`, `[t.. | h.. | w..]`).
The cos/sin tables the modules return are applied to random f32 Q `[1, S, 2, 128]`
(torch.Generator seeded 0) by diffusers' `apply_rotary_emb(x, (cos, sin), use_real=True,
use_real_unbind_dim=-1, sequence_dim=1)`: interleaved pairs, as both transformers rotate
(Wan's processor does the same product in its own lines).

Only sampled tokens are written (random.Random("rope-axes-<case>"), the first and last of each
part included): their index, positions, Q rows and rotated rows, and how far the module's
rotation is from the one at float64 angles (`max_own_error`: HunyuanVideo and Qwen-Image
build their angles in f32).

Output (stdout, JSON): {"generator", "diffusers", "torch", "cases": [{"name", "theta",
"axes_dims", "heads", "head_dim", "tokens", "text_tokens", "grid", "rows", "positions",
"q", "rotated", "max_own_error"}]}.
"""

import json
import random
import sys

import diffusers
import torch
from diffusers import FluxPipeline
from diffusers.models.embeddings import apply_rotary_emb
from diffusers.models.transformers.transformer_flux import FluxPosEmbed
from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

HEADS = 2


def default_config(cls):
    with torch.device("meta"):
        return dict(cls().config)


def rotate(name, cos, sin, positions, text, grid, theta, dims):
    s, d = cos.shape[0], cos.shape[-1]
    g = torch.Generator().manual_seed(0)
    q = torch.rand((1, s, HEADS, d), generator=g, dtype=torch.float32) * 2 - 1
    out = apply_rotary_emb(q, (cos, sin), use_real=True, use_real_unbind_dim=-1, sequence_dim=1)
    rng = random.Random(f"rope-axes-{name}")
    picks = {0, s - 1, text, text - 1} if text else {0, s - 1}
    picks |= {rng.randrange(s) for _ in range(40)}
    rows = sorted(p for p in picks if 0 <= p < s)
    pos = [[int(v) for v in positions[r]] for r in rows]
    return dict(name=name, theta=theta, axes_dims=dims, heads=HEADS, head_dim=d, tokens=s,
                text_tokens=text, grid=grid, rows=rows, positions=pos,
                q=[q[0, r].flatten().tolist() for r in rows],
                rotated=[out[0, r].flatten().tolist() for r in rows],
                max_own_error=own_error(q, out, rows, pos, dims, theta))


def own_error(q, out, rows, pos, dims, theta):
    """How far the module's rotation is from the one at float64 angles (`position *
    theta^(-2k/width)` per axis): the module's own rounding (f32 frequencies in
    HunyuanVideo's and Qwen-Image's)."""
    axis_of = [a for a, n in enumerate(dims) for _ in range(n // 2)]
    local = [k for n in dims for k in range(n // 2)]
    inv = [float(theta) ** (-2.0 * k / dims[a]) for a, k in zip(axis_of, local)]
    worst = 0.0
    for r, p in zip(rows, pos):
        ang = torch.tensor([p[a] * f for a, f in zip(axis_of, inv)], dtype=torch.float64)
        x = q[0, r].double().reshape(q.shape[2], -1, 2)
        c, s = torch.cos(ang), torch.sin(ang)
        exact = torch.stack([x[..., 0] * c - x[..., 1] * s, x[..., 0] * s + x[..., 1] * c], -1)
        worst = max(worst, float((exact.flatten() - out[0, r].double().flatten()).abs().max()))
    return worst


def flux():
    from diffusers import FluxTransformer2DModel
    c = default_config(FluxTransformer2DModel)
    theta, dims = 10000, list(c["axes_dims_rope"])
    h = w = 1024 // 16  # VAE factor 8, then 2 x 2 patches
    image = FluxPipeline._prepare_latent_image_ids(1, h, w, "cpu", torch.float32)
    text = torch.zeros(512, 3)
    ids = torch.cat([text, image], dim=0)
    cos, sin = FluxPosEmbed(theta=theta, axes_dim=dims)(ids)
    return rotate("flux1", cos.float(), sin.float(), ids.long(), 512, [h, w], theta, dims)


def wan():
    from diffusers import WanTransformer3DModel
    c = default_config(WanTransformer3DModel)
    d = c["attention_head_dim"]
    rope = WanRotaryPosEmbed(d, tuple(c["patch_size"]), c["rope_max_seq_len"])
    f, h, w = 21, 480 // 8, 832 // 8
    latent = torch.empty(1, 16, f, h, w, device="meta")
    cos, sin = rope(latent)
    cos, sin = cos.reshape(-1, d), sin.reshape(-1, d)
    ph, pw = h // 2, w // 2
    pos = torch.stack(torch.meshgrid(torch.arange(f), torch.arange(ph), torch.arange(pw),
                                     indexing="ij"), dim=-1).reshape(-1, 3)
    dims = [rope.t_dim, rope.h_dim, rope.w_dim]
    return rotate("wan21", cos.float(), sin.float(), pos, 0, [f, ph, pw], 10000.0, dims)


def hunyuan_video():
    """HunyuanVideo: `HunyuanVideoRotaryPosEmbed(patch_size, patch_size_t, rope_axes_dim,
    rope_theta)` with the transformer's default config ((16, 56, 56), 256), its `forward` on
    a 480 x 848, 61-frame video's latent (16 x 60 x 106: 16 x 30 x 53 = 25 440 tokens). The
    transformer rotates the video tokens only (its text tokens follow them)."""
    from diffusers import HunyuanVideoTransformer3DModel
    from diffusers.models.transformers.transformer_hunyuan_video import (
        HunyuanVideoRotaryPosEmbed)
    c = default_config(HunyuanVideoTransformer3DModel)
    dims, theta = list(c["rope_axes_dim"]), float(c["rope_theta"])
    rope = HunyuanVideoRotaryPosEmbed(c["patch_size"], c["patch_size_t"], dims, theta)
    f, h, w = 16, 60, 106
    cos, sin = rope(torch.empty(1, 16, f, h, w))
    pf, ph, pw = f // c["patch_size_t"], h // c["patch_size"], w // c["patch_size"]
    pos = torch.stack(torch.meshgrid(torch.arange(pf), torch.arange(ph), torch.arange(pw),
                                     indexing="ij"), dim=-1).reshape(-1, 3)
    return rotate("hunyuan_video", cos.float(), sin.float(), pos, 0, [pf, ph, pw], theta, dims)


def qwen_image():
    """Qwen-Image: `QwenEmbedRope(10000, axes_dims_rope, scale_rope=True)` on a 1024 x 1024
    image (64 x 64 tokens: rows and columns centered, -32..31) and 64 text tokens (on the
    diagonal from 32), applied by `apply_rotary_emb_qwen(x, freqs, use_real=False)` as the
    transformer applies them; text first. Qwen-Image builds its angles in f32 (`rope_params`:
    f32 frequencies, the f32 product)."""
    from diffusers import QwenImageTransformer2DModel
    from diffusers.models.transformers.transformer_qwenimage import (
        QwenEmbedRope, apply_rotary_emb_qwen)
    c = default_config(QwenImageTransformer2DModel)
    dims = list(c["axes_dims_rope"])
    rope = QwenEmbedRope(theta=10000, axes_dim=dims, scale_rope=True)
    f, h, w, text = 1, 64, 64, 64
    vid, txt = rope([(f, h, w)], device=None, max_txt_seq_len=text)
    freqs = torch.cat([txt, vid], dim=0)
    s = freqs.shape[0]
    d = 2 * freqs.shape[1]
    g = torch.Generator().manual_seed(0)
    q = torch.rand((1, s, HEADS, d), generator=g, dtype=torch.float32) * 2 - 1
    out = apply_rotary_emb_qwen(q, freqs, use_real=False)
    # The positions as the module builds them.
    m = max(h // 2, w // 2)
    pos = [[m + k] * 3 for k in range(text)]
    rows_h = list(range(-(h - h // 2), h // 2))
    rows_w = list(range(-(w - w // 2), w // 2))
    pos += [[0, rows_h[i // w], rows_w[i % w]] for i in range(h * w)]
    rng = random.Random("rope-axes-qwen_image")
    rows = sorted({0, text - 1, text, s - 1} | {rng.randrange(s) for _ in range(40)})
    own = own_error(q, out, rows, [pos[r] for r in rows], dims, 10000.0)
    return dict(name="qwen_image", theta=10000.0, axes_dims=dims, heads=HEADS, head_dim=d,
                tokens=s, text_tokens=text, grid=[f, h, w], rows=rows,
                all_positions=[v for a in range(3) for v in (p[a] for p in pos)],
                positions=[pos[r] for r in rows],
                q=[q[0, r].flatten().tolist() for r in rows],
                rotated=[out[0, r].flatten().tolist() for r in rows],
                max_own_error=own)


def main():
    out = dict(generator="tests/data/diffusers/rope_axes.py", diffusers=diffusers.__version__,
               torch=torch.__version__, cases=[flux(), wan(), hunyuan_video(), qwen_image()])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
