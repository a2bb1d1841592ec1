"""HF transformers' own Qwen3Attention on small random weights: a prefill of 16 tokens, then
4 decode steps through its DynamicCache, in float64 (the weights and inputs are float32
values, so a float32 pipeline starts from the same numbers). Writes qwen3_attention.json
beside this file, which tests/attention.rs and examples/attention.rs of wgpu-posenc-burn
compare against.

    python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch==2.15.0 transformers==5.24.0
    /tmp/hfenv/bin/python integrations/burn/tests/data/qwen3_attention.py

Deterministic: a fixed seed; the JSON is byte-identical from run to run.
"""

import json
import pathlib

import torch
import transformers
from transformers.cache_utils import DynamicCache
from transformers.models.qwen3.configuration_qwen3 import Qwen3Config
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding

HIDDEN, Q_HEADS, KV_HEADS, HEAD_DIM = 256, 4, 2, 64
PREFILL, DECODE = 16, 4
THETA, EPS = 1_000_000.0, 1e-6

torch.set_default_dtype(torch.float64)
gen = torch.Generator().manual_seed(20261202)


class F32:
    """A tensor of float32 values, written with 9 significant digits (which float32 reads
    back exactly) instead of float64's 17."""

    def __init__(self, x):
        self.text = "[" + ",".join("%.9g" % v for v in x.flatten().tolist()) + "]"


def dumps(value):
    """json.dumps, with F32 lists written as their text."""
    if isinstance(value, F32):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


def f32_values(*shape, scale=1.0, shift=0.0):
    """Random values that float32 holds exactly, as float64."""
    x = torch.randn(*shape, generator=gen, dtype=torch.float64) * scale + shift
    return x.to(torch.float32).to(torch.float64)


config = Qwen3Config(
    hidden_size=HIDDEN,
    num_attention_heads=Q_HEADS,
    num_key_value_heads=KV_HEADS,
    head_dim=HEAD_DIM,
    rope_parameters={"rope_type": "default", "rope_theta": THETA},
    rms_norm_eps=EPS,
    attention_bias=False,
    num_hidden_layers=1,
    max_position_embeddings=4096,
)
config._attn_implementation = "eager"
attention = Qwen3Attention(config, layer_idx=0).eval()
rotary = Qwen3RotaryEmbedding(config)
weights = {
    "q_proj": f32_values(Q_HEADS * HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5),
    "k_proj": f32_values(KV_HEADS * HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5),
    "v_proj": f32_values(KV_HEADS * HEAD_DIM, HIDDEN, scale=HIDDEN**-0.5),
    "o_proj": f32_values(HIDDEN, Q_HEADS * HEAD_DIM, scale=(Q_HEADS * HEAD_DIM) ** -0.5),
    "q_norm": f32_values(HEAD_DIM, scale=0.1, shift=1.0),
    "k_norm": f32_values(HEAD_DIM, scale=0.1, shift=1.0),
}
with torch.no_grad():
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        getattr(attention, name).weight.copy_(weights[name])
    attention.q_norm.weight.copy_(weights["q_norm"])
    attention.k_norm.weight.copy_(weights["k_norm"])

cache = DynamicCache(config=config)
steps = []
position = 0
for tokens in [PREFILL] + [1] * DECODE:
    hidden = f32_values(1, tokens, HIDDEN)
    positions = torch.arange(position, position + tokens).unsqueeze(0)
    cos, sin = rotary(hidden, positions)
    if tokens > 1:
        # Causal within the step (the cache is empty before the prefill).
        mask = torch.full((tokens, tokens), float("-inf")).triu(1)[None, None]
    else:
        mask = None
    with torch.no_grad():
        out, _ = attention(hidden, (cos, sin), mask, cache=cache)
    steps.append(
        {
            "start": position,
            "hidden": F32(hidden),
            "output": out.flatten().tolist(),
        }
    )
    position += tokens

golden = {
    "generator": "integrations/burn/tests/data/qwen3_attention.py",
    "transformers": transformers.__version__,
    "torch": torch.__version__,
    "module": "transformers.models.qwen3.modeling_qwen3.Qwen3Attention (eager), DynamicCache",
    "note": "float64 throughout, except eager attention's softmax, which HF takes in float32",
    "hidden_size": HIDDEN,
    "num_attention_heads": Q_HEADS,
    "num_key_value_heads": KV_HEADS,
    "head_dim": HEAD_DIM,
    "rope_theta": THETA,
    "rms_norm_eps": EPS,
    "weights": {k: F32(v) for k, v in weights.items()},
    "steps": steps,
}
path = pathlib.Path(__file__).with_name("qwen3_attention.json")
path.write_text(dumps(golden) + "\n")
print(f"wrote {path}: {len(steps)} steps")
