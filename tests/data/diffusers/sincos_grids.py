#!/usr/bin/env python3
"""diffusers' 2-D and 3-D sin-cos tables, as its own patch-embedding modules build them.

Run:    python3 tests/data/diffusers/sincos_grids.py > tests/data/diffusers/sincos_grids.json
Needs:  torch (CPU), diffusers, timm, mpmath. Python is only for this script; the Rust tests read
        its committed output.

What it records
---------------
For each case, the `pos_embed` a diffusers module holds (or returns) for a model's real
parameters, built by diffusers itself:

  - `PatchEmbed` with `pos_embed_type="sincos"` as DiT-XL/2 (256 px) and PixArt-alpha (1024 px,
    interpolation scale 2) build it: `get_2d_sincos_pos_embed(embed_dim, grid, base_size=,
    interpolation_scale=)`;
  - SD3's `PatchEmbed` with `pos_embed_max_size=192`, through `cropped_pos_embed` for a square
    and a non-square latent;
  - `CogVideoXPatchEmbed` of CogVideoX-2b (`get_3d_sincos_pos_embed`, spatial interpolation
    1.875, 226 text rows of zeros first);
  - timm's `build_sincos2d_pos_embed` (ViT-B/16 at 224 px; `reverse_coord` on a non-square
    grid; `interleave_sin_cos` with temperature 100), which computes its bands and angles in
    f32 (`[sin h | sin w | cos h | cos w]`, or `[sin h | cos h | sin w | cos w]`).

The tables are large, so rows are sampled (the first and last rows, and rows drawn with
random.Random("sincos-grid-<case>"), ten rows in all). For each sampled row: diffusers' values (the f32 buffer
the module holds, f32 values written as their shortest decimal), each block's coordinate as diffusers computes it in f32 (the same torch
expressions as `get_2d_sincos_pos_embed` / `get_3d_sincos_pos_embed`), and the real-number row
at those f32 coordinates (mpmath, 40 digits; `w_k = 10000^(-2k/width)` per block, `[sin | cos]`).

Output (stdout, JSON):
  {"generator", "diffusers", "torch", "mpmath",
   "cases": [{"name", "module", "kind": "2d" | "cropped" | "3d", "embed_dim", "grid": [..],
              "base_size", "interpolation_scale", "max_size", "temporal_interpolation_scale",
              "zero_rows", "rows": [int], "coords": [[per block]], "diffusers": [[dim]],
              "exact": [[dim]], "max_diffusers_error": float}]}
"""

import json
import random
import sys

import diffusers
import numpy
import mpmath
import torch
from diffusers.models.embeddings import CogVideoXPatchEmbed, PatchEmbed

mpmath.mp.dps = 40


def exact_block(width, c):
    half = width // 2
    c = mpmath.mpf(c)
    angles = [c * mpmath.power(10000, -mpmath.mpf(2 * k) / width) for k in range(half)]
    return [float(mpmath.sin(a)) for a in angles] + [float(mpmath.cos(a)) for a in angles]


def f32(x):
    return torch.tensor(x, dtype=torch.float32)


def coords_2d(h, w, div_h, div_w):
    """The w and h coordinates of every token, as get_2d_sincos_pos_embed computes them."""
    gh = torch.arange(h, dtype=torch.float32)
    for d in div_h:
        gh = gh / d
    gw = torch.arange(w, dtype=torch.float32)
    for d in div_w:
        gw = gw / d
    ws = gw.repeat(h)
    hs = gh.repeat_interleave(w)
    return ws, hs


def sample(name, n, extra=()):
    rng = random.Random(f"sincos-grid-{name}")
    rows = {0, n - 1, *extra}
    while len(rows) < min(n, 10):
        rows.add(rng.randrange(n))
    return sorted(rows)


def finish(case, table, blocks, exact_row=None):
    """blocks: [(width, coords over the grid tokens)]; table [rows, dim]; exact_row(coords)
    the real-number row (default: each block's [sin | cos] side by side)."""
    z = case["zero_rows"]
    rows = sample(case["name"], table.shape[0], extra=(z - 1, z) if z else ())
    coords, exact = [], []
    for r in rows:
        if r < z:
            coords.append([None for _ in blocks])
            exact.append([0.0] * case["embed_dim"])
            continue
        cs = [float(c[r - z]) for _, c in blocks]
        coords.append(cs)
        if exact_row is None:
            exact.append([v for (wd, _), c in zip(blocks, cs) for v in exact_block(wd, c)])
        else:
            exact.append(exact_row(cs))
    ours = table[rows].double().tolist()
    err = max(abs(a - b) for ra, rb in zip(ours, exact) for a, b in zip(ra, rb))
    if table.dtype == torch.float32:
        # f32 values written as their shortest decimal (they read back to the same f32).
        ours = [[float(str(numpy.float32(v))) for v in r] for r in ours]
    return dict(case, rows=rows, coords=coords, diffusers=ours, exact=exact,
                max_diffusers_error=err)


def patch_embed_case(name, sample_size, patch, dim, interpolation_scale):
    pe = PatchEmbed(height=sample_size, width=sample_size, patch_size=patch, in_channels=4,
                    embed_dim=dim, interpolation_scale=interpolation_scale)
    g = sample_size // patch
    base = sample_size // patch
    case = dict(name=name, module="PatchEmbed", kind="2d", embed_dim=dim, grid=[g, g],
                base_size=base, interpolation_scale=interpolation_scale, zero_rows=0)
    ws, hs = coords_2d(g, g, [g / base, interpolation_scale], [g / base, interpolation_scale])
    return finish(case, pe.pos_embed[0], [(dim // 2, ws), (dim // 2, hs)])


def sd3_case(name, h_px, w_px):
    pe = PatchEmbed(height=128, width=128, patch_size=2, in_channels=16, embed_dim=1536,
                    pos_embed_max_size=192)
    table = pe.cropped_pos_embed(h_px, w_px)[0]
    m, base = 192, 64
    h, w = h_px // 2, w_px // 2
    top, left = (m - h) // 2, (m - w) // 2
    ws, hs = coords_2d(m, m, [m / base, 1.0], [m / base, 1.0])
    keep = torch.tensor([i * m + j for i in range(top, top + h) for j in range(left, left + w)])
    case = dict(name=name, module="PatchEmbed(pos_embed_max_size=192).cropped_pos_embed",
                kind="cropped", embed_dim=1536, grid=[h, w], base_size=base,
                interpolation_scale=1.0, max_size=m, zero_rows=0)
    return finish(case, table, [(768, ws[keep]), (768, hs[keep])])


def cogvideox_case():
    pe = CogVideoXPatchEmbed(patch_size=2, in_channels=16, embed_dim=1920, text_embed_dim=4096,
                             sample_width=90, sample_height=60, sample_frames=49,
                             temporal_compression_ratio=4, max_text_seq_length=226,
                             spatial_interpolation_scale=1.875, temporal_interpolation_scale=1.0,
                             use_positional_embeddings=True)
    table = pe.pos_embedding[0]
    t, h, w = (49 - 1) // 4 + 1, 60 // 2, 90 // 2
    ws, hs = coords_2d(h, w, [1.875], [1.875])
    ct = torch.arange(t, dtype=torch.float32) / 1.0
    per = h * w
    case = dict(name="cogvideox_2b", module="CogVideoXPatchEmbed", kind="3d", embed_dim=1920,
                grid=[t, h, w], interpolation_scale=1.875, temporal_interpolation_scale=1.0,
                zero_rows=226)
    blocks = [(480, ct.repeat_interleave(per)), (720, ws.repeat(t)), (720, hs.repeat(t))]
    return finish(case, table, blocks)


def timm_case(name, feat_shape, dim, temperature, reverse_coord, interleave):
    """timm's build_sincos2d_pos_embed: f32 bands and angles, integer coordinates."""
    from timm.layers.pos_embed_sincos import build_sincos2d_pos_embed

    table = build_sincos2d_pos_embed(feat_shape, dim=dim, temperature=temperature,
                                     reverse_coord=reverse_coord, interleave_sin_cos=interleave)
    s0, s1 = feat_shape[::-1] if reverse_coord else feat_shape
    a0 = torch.arange(s0, dtype=torch.float32).repeat_interleave(s1)
    a1 = torch.arange(s1, dtype=torch.float32).repeat(s0)
    pd = dim // 4

    def exact_row(cs):
        parts = []
        for c in cs:
            c = mpmath.mpf(c)
            angles = [c * mpmath.power(temperature, -mpmath.mpf(k) / pd) for k in range(pd)]
            parts.append(([float(mpmath.sin(a)) for a in angles],
                          [float(mpmath.cos(a)) for a in angles]))
        (s_0, c_0), (s_1, c_1) = parts
        return s_0 + c_0 + s_1 + c_1 if interleave else s_0 + s_1 + c_0 + c_1

    case = dict(name=name, module="timm build_sincos2d_pos_embed", kind="timm", embed_dim=dim,
                grid=list(feat_shape), temperature=temperature, reverse_coord=reverse_coord,
                interleave_sin_cos=interleave, zero_rows=0)
    return finish(case, table, [(2 * pd, a0), (2 * pd, a1)], exact_row)


def main():
    torch.manual_seed(0)
    cases = [
        patch_embed_case("dit_xl_2_256", 32, 2, 1152, 1.0),
        patch_embed_case("pixart_alpha_1024", 128, 2, 1152, 2.0),
        sd3_case("sd3_1024", 1024 // 8, 1024 // 8),
        sd3_case("sd3_1024x768", 1024 // 8, 768 // 8),
        cogvideox_case(),
        timm_case("timm_vit_b16_224", [14, 14], 768, 10000.0, False, False),
        timm_case("timm_reverse_coord", [16, 12], 384, 10000.0, True, False),
        timm_case("timm_interleaved_t100", [8, 6], 256, 100.0, False, True),
    ]
    out = dict(generator="tests/data/diffusers/sincos_grids.py", diffusers=diffusers.__version__,
               torch=torch.__version__, mpmath=mpmath.__version__, cases=cases)
    json.dump(out, sys.stdout)
    for c in cases:
        print(f"{c['name']}: {len(c['rows'])} rows, the library within "
              f"{c['max_diffusers_error']:.3g} of the real number", file=sys.stderr)


if __name__ == "__main__":
    main()
