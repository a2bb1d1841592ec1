"""The cos and sin HF transformers' rotary modules return in a bf16 model (`cos.to(x.dtype)`),
for `tests/rope_axes/bf16.rs` (`RopeSpec::cos_sin_bf16`).

- Pixtral's vision tower: `PixtralVisionRotaryEmbedding(PixtralVisionConfig())` (head 64,
  theta 10 000, the default config), given a bf16 `x` and its (row, column) positions of a
  48 x 64 patch grid in row-major order (the vision model's `meshgrid(indexing="ij")`).
- Llama: `LlamaRotaryEmbedding(LlamaConfig())` (head 128, theta 10 000), a bf16 `x`,
  positions 0..1023, then 8 191 to 131 071 every 4 096.

Both return `[N, head_dim]` in the rotate-half layout; the first half (one value a pair) is
recorded, each bf16 value as the float it is (exact in JSON).

Output `hf_bf16_cos_sin.json`: `{"pixtral": {config, grid, cos, sin, cos_f32}, "llama":
{config, positions, cos, sin}}`. Run with transformers 5.24 and torch 2.15 on the CPU.
"""

import json
import pathlib

import torch
import transformers
from transformers import LlamaConfig, PixtralVisionConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.pixtral.modeling_pixtral import PixtralVisionRotaryEmbedding


def halves(t, d):
    return t.reshape(-1, d)[:, : d // 2].float().tolist()


def pixtral():
    config = PixtralVisionConfig()
    module = PixtralVisionRotaryEmbedding(config)
    h, w = torch.meshgrid(torch.arange(48), torch.arange(64), indexing="ij")
    pos = torch.stack([h.flatten(), w.flatten()], dim=-1)
    d = config.head_dim
    cos, sin = module(torch.zeros(pos.shape[0], d, dtype=torch.bfloat16), pos)
    assert cos.dtype == torch.bfloat16
    return dict(config=config.to_dict(), grid=[48, 64], cos=halves(cos, d), sin=halves(sin, d))


def llama():
    config = LlamaConfig()
    module = LlamaRotaryEmbedding(config)
    positions = list(range(1024)) + list(range(8191, 131072, 4096))
    ids = torch.tensor([positions])
    d = config.hidden_size // config.num_attention_heads
    cos, sin = module(torch.zeros(1, len(positions), d, dtype=torch.bfloat16), ids)
    assert cos.dtype == torch.bfloat16
    return dict(config=config.to_dict(), positions=positions, cos=halves(cos, d), sin=halves(sin, d))


def main():
    out = {"script": "tests/data/hf/hf_bf16_cos_sin.py", "transformers": transformers.__version__,
           "torch": torch.__version__, "pixtral": pixtral(), "llama": llama()}
    path = pathlib.Path(__file__).with_name("hf_bf16_cos_sin.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
