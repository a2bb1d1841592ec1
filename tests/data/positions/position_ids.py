"""Position ids as the libraries' own code makes them, for `tests/rope_axes/grids.rs` (the
crate's `PositionGrid` recipes, built on the GPU, must give the same values).

- FLUX.1: `FluxPipeline._prepare_latent_image_ids` for a 24 x 40 packed latent after 8 text
  ids of zeros (the transformer's `cat((txt_ids, img_ids))`).
- FLUX.1 Kontext: the same, then the reference image's ids as
  `FluxKontextPipeline.prepare_latents` makes them (`_prepare_latent_image_ids`, then
  `image_ids[..., 0] = 1`) for a 16 x 20 packed reference, concatenated after the latent's.
- FLUX.2: `Flux2Pipeline._prepare_text_ids` (8 tokens), `_prepare_latent_ids` (24 x 40) and
  `_prepare_image_ids` (references of 16 x 20 and 12 x 8), text first, then
  `cat([latent_ids, image_latent_ids])` as the pipeline passes `img_ids`.
- Qwen-Image: `QwenEmbedRope(10000, [16, 56, 56], scale_rope=True)` for two images of odd
  and even sides, `[(1, 7, 9), (2, 5, 6)]`, and 5 text tokens; its positions read back from
  its own output: each axis's complex row looked up among its tables' rows at every index
  in [-4096, 4096), text first as the joint attention concatenates them.
- Qwen2-VL's vision tower: `transformers.vision_utils.get_vision_position_ids` for
  `grid_thw = [2, 12, 20]` at `spatial_merge_size` 2, and `[1, 9, 15]` at 3: (row, column) in
  merge-block order.

Output `position_ids.json`: `{"cases": [{"name", "axes", "tokens", "ids": [[...] a token]}]}`.
Run with transformers 5.24 and diffusers 0.42.1 on the CPU.
"""

import json
import pathlib

import diffusers
import torch
import transformers
from diffusers import Flux2Pipeline, FluxKontextPipeline, FluxPipeline
from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope
from transformers.vision_utils import get_vision_position_ids

CPU = torch.device("cpu")


def flux():
    text = torch.zeros(8, 3)
    image = FluxPipeline._prepare_latent_image_ids(1, 24, 40, CPU, torch.float32)
    return torch.cat((text, image), dim=0)


def flux_kontext():
    latent = FluxKontextPipeline._prepare_latent_image_ids(1, 24, 40, CPU, torch.float32)
    reference = FluxKontextPipeline._prepare_latent_image_ids(1, 16, 20, CPU, torch.float32)
    reference[..., 0] = 1
    return torch.cat((torch.zeros(8, 3), torch.cat([latent, reference], dim=0)), dim=0)


def flux2():
    text = Flux2Pipeline._prepare_text_ids(torch.empty(1, 8, 4))[0]
    latent = Flux2Pipeline._prepare_latent_ids(torch.empty(1, 4, 24, 40))[0]
    refs = Flux2Pipeline._prepare_image_ids([torch.empty(1, 4, 16, 20), torch.empty(1, 4, 12, 8)])[0]
    return torch.cat([text, torch.cat([latent, refs], dim=0)], dim=0).float()


def qwen_image():
    dims = [16, 56, 56]
    module = QwenEmbedRope(10000, dims, scale_rope=True)
    vid, txt = module([[(1, 7, 9), (2, 5, 6)]], max_txt_seq_len=5, device=CPU)
    rows = torch.cat([txt, vid])
    out, start = [], 0
    for a, d in enumerate(dims):
        table = torch.cat([module.neg_freqs, module.pos_freqs])[:, start:start + d // 2]
        index = list(range(-4096, 0)) + list(range(4096))
        lookup = {tuple(r): i for r, i in zip(torch.view_as_real(table).reshape(len(index), -1).tolist(), index)}
        block = torch.view_as_real(rows[:, start:start + d // 2]).reshape(rows.shape[0], -1).tolist()
        out.append([float(lookup[tuple(r)]) for r in block])
        start += d // 2
    return torch.tensor(out).T


def merge(grid, m):
    pos = get_vision_position_ids(torch.tensor([grid]), m)
    zeros = torch.zeros(pos.shape[0], 1, dtype=pos.dtype)
    return torch.cat([zeros, pos], dim=1).float()


def main():
    cases = [("flux", flux()), ("flux_kontext", flux_kontext()), ("flux2", flux2()),
             ("qwen_image", qwen_image()),
             ("qwen2_vl_merge2", merge([2, 12, 20], 2)), ("qwen2_vl_merge3", merge([1, 9, 15], 3))]
    out = {"script": "tests/data/positions/position_ids.py", "diffusers": diffusers.__version__,
           "transformers": transformers.__version__, "torch": torch.__version__,
           "cases": [{"name": n, "axes": ids.shape[1], "tokens": ids.shape[0],
                      "ids": ids.tolist()} for n, ids in cases]}
    path = pathlib.Path(__file__).with_name("position_ids.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    for n, ids in cases:
        print(n, tuple(ids.shape))


if __name__ == "__main__":
    main()
