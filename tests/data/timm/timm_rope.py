"""timm's 2-D rotary embeddings, for `tests/rope_axes/timm.rs`: each model built by timm
(`timm.create_model(name, pretrained=False)`, seed 0) on the CPU, its `rope` module's
embedding at the model's own patch grid, and a seeded q rotated by timm's own
`apply_rot_embed_cat` (the function `EvaAttention` applies to the tokens after the prefix).

- `RotaryEmbeddingCat` (EVA-02, and the naver RoPE-ViT "axial" models): per-axis bands
  `temperature^(-k / (head_dim / 4))`, the grid from timm's `_build_grid` (index positions,
  rescaled to `ref_feat_shape` as EVA-02 does: `x / f * r` in f32; `xy` indexing for the
  RoPE-ViTs), interleaved pairs.
- `RotaryEmbeddingMixed` (RoPE-Mixed): learned frequencies `freqs` `[2, depth, heads,
  head_dim / 2]`, angle `t_x * fx + t_y * fy` per layer and head; recorded for the first and
  the last layer.

Output `timm_rope.json`: `{"models": [{name, class, heads, head_dim, prefix, feat_shape,
ref_feat_shape, temperature, grid_indexing, rotate_half, grid: [[c0, c1] a token], rows,
q, rotated, layers?: [{layer, freqs: [2][heads][pairs], q, rotated}]}]}` (q and rotated:
`[rows][heads][head_dim]`). Run with timm 1.0.31 and torch 2.15 on the CPU.
"""

import json
import pathlib
import random

import timm
import torch
from timm.layers.pos_embed_sincos import _build_grid, apply_rot_embed_cat, get_mixed_grid

MODELS = ["eva02_tiny_patch14_224", "eva02_small_patch14_336", "eva02_base_patch14_448",
          "eva02_large_patch14_clip_336", "vit_small_patch16_rope_224",
          "vit_base_patch16_rope_reg1_gap_256", "vit_small_patch16_rope_mixed_224",
          "vit_base_patch16_rope_mixed_ape_224"]
SAMPLES = 24


def rotate(q, emb, half):
    return apply_rot_embed_cat(q, emb, half=half)


def record(name):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    rope = model.rope
    attn = model.blocks[0].attn
    heads = attn.num_heads
    head_dim = attn.head_dim if hasattr(attn, "head_dim") else model.embed_dim // heads
    half = bool(getattr(attn, "rotate_half", False))
    feat = list(model.patch_embed.grid_size)
    n = feat[0] * feat[1]
    rng = random.Random(name)
    rows = sorted({0, n - 1} | {rng.randrange(n) for _ in range(SAMPLES - 2)})
    gen = torch.Generator().manual_seed(7)
    q = torch.randn(1, heads, n, head_dim, generator=gen)
    out = dict(name=name, cls=type(rope).__name__, heads=heads, head_dim=head_dim,
               prefix=model.num_prefix_tokens, feat_shape=feat, rotate_half=half,
               temperature=float(rope.temperature), grid_indexing=rope.grid_indexing, rows=rows)
    if type(rope).__name__ == "RotaryEmbeddingMixed":
        t_x, t_y = get_mixed_grid(feat, grid_indexing=rope.grid_indexing)
        out["grid"] = torch.stack([t_x, t_y], -1).tolist()
        emb = rope.get_embed()  # (depth, heads, N, 2 head_dim)
        layers = []
        for layer in (0, emb.shape[0] - 1):
            r = rotate(q, emb[layer][None], half)[0]
            layers.append(dict(layer=layer, freqs=rope.freqs[:, layer].tolist(),
                               rotated=[r[:, t].tolist() for t in rows]))
        out["layers"] = layers
        out["ref_feat_shape"] = None
    else:
        ref = list(rope.ref_feat_shape) if rope.ref_feat_shape is not None else None
        grid = _build_grid(feat, grid_type="index", ref_feat_shape=ref,
                           grid_offset=rope.grid_offset, grid_indexing=rope.grid_indexing)
        out["grid"] = grid.reshape(-1, 2).tolist()
        out["ref_feat_shape"] = ref
        out["grid_offset"] = float(rope.grid_offset)
        emb = rope.get_embed()
        r = rotate(q, emb, half)[0]
        out["rotated"] = [r[:, t].tolist() for t in rows]
    out["q"] = [q[0][:, t].tolist() for t in rows]
    return out


def main():
    models = [record(m) for m in MODELS]
    data = {"script": "tests/data/timm/timm_rope.py", "timm": timm.__version__,
            "torch": torch.__version__, "models": models}
    path = pathlib.Path(__file__).with_name("timm_rope.json")
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    for m in models:
        print(m["name"], m["cls"], m["heads"], m["head_dim"], m["feat_shape"],
              m["ref_feat_shape"], m["grid_indexing"], m["temperature"], m["prefix"], m["rotate_half"])


if __name__ == "__main__":
    main()
