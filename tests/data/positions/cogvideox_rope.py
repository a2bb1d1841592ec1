"""CogVideoX 1.0's 3-D RoPE as its pipeline makes it, for `tests/rope_axes/grids.rs`:
`CogVideoXPipeline`'s `get_resize_crop_region_for_grid` (the latent grid fitted into the
transformer's base grid `sample_height / patch_size x sample_width / patch_size`, 30 x 45)
and diffusers' `get_3d_rotary_pos_embed` (crop linspace positions, head_dim 64: t, h, w
widths 16, 24, 24), applied by diffusers' `apply_rotary_emb` to a seeded q after 8 text
tokens (which the attention leaves unrotated). Two resolutions: 480 x 720 (the base grid,
integer positions) and 768 x 1360 (48 x 85 patches in a 25 x 45 crop from row 2: fractional
positions). 13 latent frames (49 video frames).

Output `cogvideox_rope.json`: `{"cases": [{name, height, width, frames, grid, base, crop,
grid_h, grid_w, text, heads, head_dim, rows, q, rotated}]}` (q, rotated: `[rows][heads][64]`,
rows over the whole sequence, text included). Run with diffusers 0.42.1 on the CPU.
"""

import json
import pathlib
import random

import diffusers
import torch
from diffusers.models.embeddings import apply_rotary_emb, get_3d_rotary_pos_embed
from diffusers.pipelines.cogvideo.pipeline_cogvideox import get_resize_crop_region_for_grid

HEAD_DIM, HEADS, TEXT, FRAMES, BASE = 64, 2, 8, 13, (30, 45)


def case(height, width):
    gh, gw = height // 16, width // 16
    crop = get_resize_crop_region_for_grid((gh, gw), BASE[1], BASE[0])
    cos, sin = get_3d_rotary_pos_embed(HEAD_DIM, crop, (gh, gw), FRAMES)
    (start, stop) = crop
    grid_h = torch.linspace(start[0], stop[0] * (gh - 1) / gh, gh, dtype=torch.float32)
    grid_w = torch.linspace(start[1], stop[1] * (gw - 1) / gw, gw, dtype=torch.float32)
    n = TEXT + cos.shape[0]
    gen = torch.Generator().manual_seed(height + width)
    q = torch.randn(1, HEADS, n, HEAD_DIM, generator=gen)
    rotated = q.clone()
    rotated[:, :, TEXT:] = apply_rotary_emb(q[:, :, TEXT:], (cos, sin))
    rng = random.Random(height * width)
    rows = sorted({0, TEXT - 1, TEXT, n - 1} | {rng.randrange(n) for _ in range(28)})
    return dict(name=f"cogvideox_{height}x{width}", height=height, width=width, frames=FRAMES,
                grid=[gh, gw], base=list(BASE), crop=[list(start), list(stop)],
                grid_h=grid_h.tolist(), grid_w=grid_w.tolist(), text=TEXT, heads=HEADS,
                head_dim=HEAD_DIM, rows=rows, q=[q[0][:, r].tolist() for r in rows],
                rotated=[rotated[0][:, r].tolist() for r in rows])


def main():
    cases = [case(480, 720), case(768, 1360)]
    out = {"script": "tests/data/positions/cogvideox_rope.py", "diffusers": diffusers.__version__,
           "torch": torch.__version__, "cases": cases}
    path = pathlib.Path(__file__).with_name("cogvideox_rope.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    for c in cases:
        print(c["name"], c["grid"], c["crop"], c["grid_h"][:3])


if __name__ == "__main__":
    main()
