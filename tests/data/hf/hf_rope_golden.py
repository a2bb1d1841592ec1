#!/usr/bin/env python3
"""RoPE golden data produced by HF transformers' own code, for `RopeSpec::from_hf_config`.

Run (from the repository root):

    python3 -m venv /tmp/hfenv
    /tmp/hfenv/bin/pip install transformers torch      # transformers 5.x; see README.md
    /tmp/hfenv/bin/python tests/data/hf/hf_rope_golden.py > tests/data/hf/hf_rope_golden.json

What it does, per fixture in tests/data/hf/configs/:

1. copies the fixture to a temporary folder as `config.json` and loads it with
   `transformers.AutoConfig.from_pretrained(folder)`, the way a user's load reads the file;
   for composite (vision-language) configs it takes `config.get_text_config()`, the sub-config
   the language model is built from;
2. builds the family's own rotary-embedding module from that config (a fresh instance for every
   case: dynamic NTK and LongRoPE are stateful), calls its `forward` with the case's position
   ids and applies the family's own apply-rotary function to a fixed query tensor
   `q[0, 0, i, k] = sin(0.37 * k + 0.11 * i + 1.0)` (row i of the case, element k of the head);
   shapes and call sequence are those of the family's attention module;
3. records the input, the rotated output, the module's `inv_freq` buffer after the call and its
   attention scaling.

Precision. HF computes the frequencies and angles in float32 no matter the module's dtype
(`dtype=torch.float`, `torch.float32` and `Tensor.float()` are written into the code). The
recorded `output` comes from the *same code* run with those three float32 spellings redirected
to float64 (see `float64_mode`), so it is HF's algorithm evaluated in binary64. Each case also
records `hf_float32_max_abs_err`: per position, the largest |difference| between the
unmodified (float32-internal) HF run on the same float64 input and the float64 `output`; it
grows with the position (about 1e-7 * angle).
"""

import contextlib
import importlib
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

HERE = os.path.dirname(os.path.abspath(__file__))

SPREAD = [0, 1, 2, 3, 7, 100, 1000, 4095, 4096, 8191, 8192, 32767, 32768, 65535, 131071,
          262143, 524287, 1000000]
SHORT = list(range(8))
SHORT16 = list(range(16))
# Fewer rows for the 256-wide heads, to keep the JSON small.
SPREAD_WIDE = [0, 1, 3, 100, 4095, 4096, 32768, 131071, 1000000]
SHORT_WIDE = list(range(4))
# A vision-like M-RoPE block: (t, h, w) differ per token.
VISION_T = [5, 5, 5, 5, 6, 6, 6, 6, 20, 1000]
VISION_H = [5, 5, 6, 6, 5, 5, 6, 6, 300, 65535]
VISION_W = [5, 6, 5, 6, 5, 6, 5, 6, 7, 1000000]

INPUT_FORMULA = ("q[0, 0, i, k] = sin(0.37 * k + 0.11 * i + 1.0) in binary64 (Python math.sin), "
                 "i = row of the case (0-based, not the position), k = 0 .. head_dim - 1; "
                 "the stored `input` is the exact tensor fed to HF")


def make_input(n, d):
    return torch.tensor([[math.sin(0.37 * k + 0.11 * i + 1.0) for k in range(d)] for i in range(n)],
                        dtype=torch.float64)


@contextlib.contextmanager
def float64_mode():
    """Redirects HF's hard-coded float32 (torch.float, torch.float32, Tensor.float()) to float64."""
    saved = (torch.float, torch.float32, torch.Tensor.float, torch.get_default_dtype())
    torch.float = torch.float64
    torch.float32 = torch.float64
    torch.Tensor.float = lambda self, *a, **kw: self.double(*a, **kw)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.float, torch.float32, torch.Tensor.float = saved[:3]
        torch.set_default_dtype(saved[3])


def modeling(name):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


# ---------------------------------------------------------------------------------------------
# Runners: one per family kind. Each returns (output[n, d], inv_freq or None, attention_scaling).
# `pos` is a list of ints, or for M-RoPE a list of 3 lists (t, h, w).
# ---------------------------------------------------------------------------------------------


def run_rotate_half(module, rot_cls, apply_fn="apply_rotary_pos_emb"):
    """Llama-style: rot(x, position_ids) -> (cos, sin); apply_rotary_pos_emb(q, k, cos, sin).
    Used by llama, mistral, qwen2, phi3, gpt_neox, gpt_oss, qwen2_vl, qwen3_vl (q: [b, h, s, d])."""
    def run(cfg, pos, q, layer_type):
        m = modeling(module)
        rot = getattr(m, rot_cls)(cfg)
        if pos and isinstance(pos[0], list):
            position_ids = torch.tensor(pos, dtype=torch.int64)[:, None, :]  # [3, batch, seq]
        else:
            position_ids = torch.tensor([pos], dtype=torch.int64)            # [batch, seq]
        x = q[None, None]                                                     # [1, 1, n, d]
        cos, sin = rot(x, position_ids)
        out, _ = getattr(m, apply_fn)(x, x.clone(), cos, sin)
        return out[0, 0], rot.inv_freq, rot.attention_scaling
    return run


def run_gemma3(cfg, pos, q, layer_type):
    m = modeling("gemma3")
    rot = m.Gemma3RotaryEmbedding(cfg)
    x = q[None, None]
    cos, sin = rot(x, torch.tensor([pos], dtype=torch.int64), layer_type)
    out, _ = m.apply_rotary_pos_emb(x, x.clone(), cos, sin)
    return out[0, 0], getattr(rot, f"{layer_type}_inv_freq"), getattr(rot, f"{layer_type}_attention_scaling")


def run_gemma4(cfg, pos, q, layer_type):
    m = modeling("gemma4")
    rot = m.Gemma4TextRotaryEmbedding(cfg)
    x = q[None, :, None, :]  # Gemma4TextAttention rotates q as [b, s, h, d], unsqueeze_dim=2
    cos, sin = rot(x, torch.tensor([pos], dtype=torch.int64), layer_type)
    out = m.apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=2)
    return out[0, :, 0, :], getattr(rot, f"{layer_type}_inv_freq"), getattr(rot, f"{layer_type}_attention_scaling")


def run_llama4(cfg, pos, q, layer_type):
    """Llama4TextAttention: q is [b, s, h, d] when apply_rotary_emb (complex pairs) runs."""
    m = modeling("llama4")
    rot = m.Llama4TextRotaryEmbedding(cfg)
    x = q[None, :, None, :]
    freqs_cis = rot(x, torch.tensor([pos], dtype=torch.int64))
    out, _ = m.apply_rotary_emb(x, x.clone(), freqs_cis)
    return out[0, :, 0, :], rot.inv_freq, rot.attention_scaling


def run_deepseek_v2(cfg, pos, q, layer_type):
    """DeepseekV2Attention: q_pe is [b, h, s, qk_rope_head_dim]; apply_rotary_emb (complex pairs)."""
    m = modeling("deepseek_v2")
    rot = m.DeepseekV2RotaryEmbedding(cfg)
    x = q[None, None]
    freqs_cis = rot(x, torch.tensor([pos], dtype=torch.int64))
    out, _ = m.apply_rotary_emb(x, x.clone(), freqs_cis)
    return out[0, 0], rot.inv_freq, rot.attention_scaling


def run_gptj(cfg, pos, q, layer_type):
    """GPTJAttention: q is [b, s, h, d]; the first rotary_dim lanes rotate (rotate_every_two)."""
    m = modeling("gptj")
    rot = m.GPTJRotaryEmbedding(cfg)
    x = q[None, :, None, :]
    sin, cos = rot(x, torch.tensor([pos], dtype=torch.int64))
    rd = cfg.rotary_dim
    if rd is not None:
        q_rot = m.apply_rotary_pos_emb(x[:, :, :, :rd], sin, cos)
        out = torch.cat([q_rot, x[:, :, :, rd:]], dim=-1)
    else:
        out = m.apply_rotary_pos_emb(x, sin, cos)
    return out[0, :, 0, :], None, 1.0


# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------

STD_CASES = [("spread", SPREAD), ("short", SHORT)]
WIDE_CASES = [("spread", SPREAD_WIDE), ("short", SHORT_WIDE)]

MODELS = [
    dict(name="llama-2-7b", config="configs/llama-2-7b.json", hub="meta-llama/Llama-2-7b-hf",
         run=run_rotate_half("llama", "LlamaRotaryEmbedding"),
         rotary_class="LlamaRotaryEmbedding", apply="modeling_llama.apply_rotary_pos_emb (rotate_half)",
         layout="half_split", cases=STD_CASES),
    dict(name="llama-3.1-8b", config="configs/llama-3.1-8b.json", hub="meta-llama/Llama-3.1-8B",
         run=run_rotate_half("llama", "LlamaRotaryEmbedding"),
         rotary_class="LlamaRotaryEmbedding", apply="modeling_llama.apply_rotary_pos_emb (rotate_half)",
         layout="half_split", cases=STD_CASES),
    dict(name="llama-4-scout-17b-16e", config="configs/llama-4-scout-17b-16e.json",
         hub="meta-llama/Llama-4-Scout-17B-16E", run=run_llama4,
         rotary_class="Llama4TextRotaryEmbedding",
         apply="modeling_llama4.apply_rotary_emb (view_as_complex on adjacent pairs)",
         layout="interleaved", cases=STD_CASES),
    dict(name="mistral-7b-v0.1", config="configs/mistral-7b-v0.1.json", hub="mistralai/Mistral-7B-v0.1",
         run=run_rotate_half("mistral", "MistralRotaryEmbedding"),
         rotary_class="MistralRotaryEmbedding", apply="modeling_mistral.apply_rotary_pos_emb (rotate_half)",
         layout="half_split", cases=STD_CASES),
    dict(name="qwen2.5-7b-instruct-yarn", config="configs/qwen2.5-7b-instruct-yarn.json",
         hub="Qwen/Qwen2.5-7B-Instruct (+ the model card's YaRN rope_scaling block)",
         run=run_rotate_half("qwen2", "Qwen2RotaryEmbedding"),
         rotary_class="Qwen2RotaryEmbedding", apply="modeling_qwen2.apply_rotary_pos_emb (rotate_half)",
         layout="half_split", cases=STD_CASES),
    dict(name="qwen2-vl-7b-instruct", config="configs/qwen2-vl-7b-instruct.json",
         hub="Qwen/Qwen2-VL-7B-Instruct (4.x flat form)",
         run=run_rotate_half("qwen2_vl", "Qwen2VLRotaryEmbedding"),
         rotary_class="Qwen2VLRotaryEmbedding (recomposition_frequencies: contiguous mrope_section chunks)",
         apply="modeling_qwen2_vl.apply_rotary_pos_emb (rotate_half)", layout="half_split", mrope=True,
         cases=[("text_spread", "mrope_text", SPREAD), ("text_short", "mrope_text", SHORT),
                ("vision", "mrope", [VISION_T, VISION_H, VISION_W])]),
    dict(name="qwen2-vl-7b-instruct-v5", config="configs/qwen2-vl-7b-instruct-v5.json",
         hub="Qwen/Qwen2-VL-7B-Instruct, re-saved by transformers 5.x save_pretrained (nested text_config)",
         run=run_rotate_half("qwen2_vl", "Qwen2VLRotaryEmbedding"),
         rotary_class="Qwen2VLRotaryEmbedding (recomposition_frequencies: contiguous mrope_section chunks)",
         apply="modeling_qwen2_vl.apply_rotary_pos_emb (rotate_half)", layout="half_split", mrope=True,
         cases=[("text_few", "mrope_text", [0, 1, 4096, 32767, 1000000]),
                ("vision", "mrope", [VISION_T, VISION_H, VISION_W])]),
    dict(name="qwen3-vl-8b-instruct", config="configs/qwen3-vl-8b-instruct.json",
         hub="Qwen/Qwen3-VL-8B-Instruct", run=run_rotate_half("qwen3_vl", "Qwen3VLTextRotaryEmbedding"),
         rotary_class="Qwen3VLTextRotaryEmbedding (recomposition_frequencies: interleaved t/h/w)",
         apply="modeling_qwen3_vl.apply_rotary_pos_emb (rotate_half)", layout="half_split", mrope=True,
         cases=[("text_spread", "mrope_text", SPREAD), ("text_short", "mrope_text", SHORT),
                ("vision", "mrope", [VISION_T, VISION_H, VISION_W])]),
    dict(name="phi-3-mini-128k-instruct", config="configs/phi-3-mini-128k-instruct.json",
         hub="microsoft/Phi-3-mini-128k-instruct", run=run_rotate_half("phi3", "Phi3RotaryEmbedding"),
         rotary_class="Phi3RotaryEmbedding", apply="modeling_phi3.apply_rotary_pos_emb (rotate_half, partial-aware)",
         layout="half_split",
         cases=[("spread", SPREAD), ("short", SHORT16), ("short_boundary_4095", [0, 1, 2, 4095]),
                            ("long_boundary_4096", [0, 1, 2, 4096]),
                            ("ids_32640_32767", list(range(32640, 32768)))]),
    dict(name="pythia-410m", config="configs/pythia-410m.json", hub="EleutherAI/pythia-410m",
         run=run_rotate_half("gpt_neox", "GPTNeoXRotaryEmbedding"),
         rotary_class="GPTNeoXRotaryEmbedding",
         apply="modeling_gpt_neox.apply_rotary_pos_emb (rotate_half on the first rotary_dim lanes)",
         layout="half_split", cases=STD_CASES),
    dict(name="gpt-j-6b", config="configs/gpt-j-6b.json", hub="EleutherAI/gpt-j-6b", run=run_gptj,
         rotary_class="GPTJRotaryEmbedding (sin/cos table of n_positions rows, theta 10000 hard-coded)",
         apply="modeling_gptj.apply_rotary_pos_emb (rotate_every_two on the first rotary_dim lanes)",
         layout="interleaved",
         # The table has n_positions (2048) rows: HF cannot rotate positions >= 2048.
         cases=[("spread", [0, 1, 2, 3, 7, 100, 1000, 2047]), ("short", SHORT_WIDE)]),
    dict(name="deepseek-v2-lite", config="configs/deepseek-v2-lite.json", hub="deepseek-ai/DeepSeek-V2-Lite",
         run=run_deepseek_v2, rotary_class="DeepseekV2RotaryEmbedding",
         apply="modeling_deepseek_v2.apply_rotary_emb (view_as_complex on adjacent pairs of q_pe)",
         layout="interleaved", cases=STD_CASES),
    dict(name="gemma-3-1b-it", config="configs/gemma-3-1b-it.json", hub="google/gemma-3-1b-it",
         run=run_gemma3, rotary_class="Gemma3RotaryEmbedding (one inv_freq per layer type)",
         apply="modeling_gemma3.apply_rotary_pos_emb (rotate_half)", layout="half_split",
         layer_type_cases=["sliding_attention", "full_attention"], cases=WIDE_CASES),
    dict(name="gemma-3-4b-it", config="configs/gemma-3-4b-it.json", hub="google/gemma-3-4b-it",
         run=run_gemma3, rotary_class="Gemma3RotaryEmbedding (one inv_freq per layer type)",
         apply="modeling_gemma3.apply_rotary_pos_emb (rotate_half)", layout="half_split",
         layer_type_cases=["sliding_attention", "full_attention"], cases=WIDE_CASES),
    dict(name="gemma-3-4b-it-v5", config="configs/gemma-3-4b-it-v5.json",
         hub="google/gemma-3-4b-it, re-saved by transformers 5.x save_pretrained (nested per-layer-type "
             "rope_parameters)",
         run=run_gemma3, rotary_class="Gemma3RotaryEmbedding (one inv_freq per layer type)",
         apply="modeling_gemma3.apply_rotary_pos_emb (rotate_half)", layout="half_split",
         layer_type_cases=["sliding_attention", "full_attention"],
         cases=[("few", [0, 1, 4096, 1000000])]),
    dict(name="gpt-oss-20b", config="configs/gpt-oss-20b.json", hub="openai/gpt-oss-20b",
         run=run_rotate_half("gpt_oss", "GptOssRotaryEmbedding"),
         rotary_class="GptOssRotaryEmbedding (one module for all layer types)",
         apply="modeling_gpt_oss.apply_rotary_pos_emb (_apply_rotary_emb: first/second half)",
         layout="half_split", cases=STD_CASES),
    dict(name="gemma4-text-defaults", config="configs/gemma4-text-defaults.json",
         hub="none: transformers' own Gemma4TextConfig() defaults, saved by save_pretrained (synthetic)",
         run=run_gemma4, rotary_class="Gemma4TextRotaryEmbedding (per layer type; full_attention: proportional)",
         apply="modeling_gemma4.apply_rotary_pos_emb (rotate_half)", layout="half_split",
         layer_type_cases=["sliding_attention", "full_attention"],
         cases=[("spread", [0, 1, 7, 1000, 32767, 1000000])]),
]


def load_config(path):
    folder = tempfile.mkdtemp()
    try:
        shutil.copy(os.path.join(HERE, path), os.path.join(folder, "config.json"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            top = AutoConfig.from_pretrained(folder)
    finally:
        shutil.rmtree(folder)
    return top, top.get_text_config()


def jsonable(v):
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, torch.Tensor):
        return v.tolist()
    return repr(v)


def safe_attr(cfg, name):
    try:
        return getattr(cfg, name, None)
    except Exception:  # Gemma 4's heterogeneous configs refuse global per-layer attributes
        return None


def mrope_axis_of_pair(run_cfg, spec):
    """Which axis (0 = t, 1 = h, 2 = w) HF's recomposition picks for each frequency pair j."""
    m = modeling(spec["run_module"])
    rot = getattr(m, spec["rot_cls"])(run_cfg)
    half = rot.inv_freq.shape[0]
    tagged = torch.stack([torch.full((1, 1, half), float(a)) for a in range(3)])  # [3, b, s, half]
    out = rot.recomposition_frequencies(tagged)[0, 0]
    return [int(v) for v in out[:half].tolist()]


def main():
    out_models = []
    for spec in MODELS:
        top, text = load_config(spec["config"])
        layer_types = safe_attr(text, "layer_types")
        no_rope = safe_attr(text, "no_rope_layers")
        head_dim = safe_attr(text, "head_dim") or text.hidden_size // text.num_attention_heads
        if spec["name"].startswith("deepseek"):
            head_dim = text.qk_rope_head_dim
        model = {
            "name": spec["name"],
            "config": spec["config"],
            "hub_repo": spec["hub"],
            "model_type": top.model_type,
            "text_model_type": text.model_type,
            "config_class": type(top).__name__,
            "text_config_class": type(text).__name__,
            "rotary_class": spec["rotary_class"],
            "apply_function": spec["apply"],
            "head_dim": None,
            "rotary_dim": None,
            "pair_layout": spec["layout"],
            "max_position_embeddings": safe_attr(text, "max_position_embeddings"),
            "rope_parameters": jsonable(safe_attr(text, "rope_parameters")),
            "layer_types": list(layer_types) if layer_types is not None else None,
            "no_rope_layers": list(no_rope) if no_rope is not None else None,
            "nope_layer_indices": ([i for i, v in enumerate(no_rope) if not v] if no_rope is not None else None),
            "cases": [],
        }
        layer_cases = spec.get("layer_type_cases", [None])
        for layer_type in layer_cases:
            for case in spec["cases"]:
                if len(case) == 3:
                    label, kind, pos = case
                    if kind == "mrope_text":
                        pos = [list(pos), list(pos), list(pos)]
                else:
                    label, pos = case
                n = len(pos[0]) if pos and isinstance(pos[0], list) else len(pos)
                d = head_dim
                if spec["name"].startswith("gemma4"):
                    d = text.per_layer_config[layer_type].head_dim
                q = make_input(n, d)
                # Fresh config and module per case; float64 run, then HF's own float32-internal run.
                with float64_mode():
                    _, cfg64 = load_config(spec["config"])
                    out64, inv64, att64 = spec["run"](cfg64, pos, q.clone(), layer_type)
                _, cfg32 = load_config(spec["config"])
                out32, _, _ = spec["run"](cfg32, pos, q.clone(), layer_type)
                out64 = out64.to(torch.float64)
                err = (out32.to(torch.float64) - out64).abs().max(dim=-1).values
                assert out64.shape == (n, d), (spec["name"], out64.shape)
                rotary_dim = 2 * inv64.shape[0] if inv64 is not None else (top.rotary_dim or d)
                if model["head_dim"] is None:
                    model["head_dim"], model["rotary_dim"] = d, rotary_dim
                c = {
                    "label": label,
                    "layer_type": layer_type,
                    "head_dim": d,
                    "rotary_dim": rotary_dim,
                    "positions": pos,
                    "attention_scaling": float(att64),
                    "inv_freq": inv64.tolist() if inv64 is not None else None,
                    "input": q.tolist(),
                    "output": out64.tolist(),
                    "hf_float32_max_abs_err": [float(f"{e:.3g}") for e in err.tolist()],
                }
                model["cases"].append(c)
        if spec.get("mrope"):
            mod = {"qwen2_vl": ("qwen2_vl", "Qwen2VLRotaryEmbedding"),
                   "qwen3_vl": ("qwen3_vl", "Qwen3VLTextRotaryEmbedding")}[top.model_type]
            with float64_mode():
                _, cfg64 = load_config(spec["config"])
                model["mrope_section"] = list(cfg64.rope_parameters.get("mrope_section"))
                model["mrope_axis_of_pair"] = mrope_axis_of_pair(
                    cfg64, {"run_module": mod[0], "rot_cls": mod[1]})
        if spec["name"].startswith("gemma4"):
            model["head_dim"] = {lt: text.per_layer_config[lt].head_dim for lt in layer_cases}
            model["rotary_dim"] = {c["layer_type"]: c["rotary_dim"] for c in model["cases"]}
        out_models.append(model)
        print(f"{spec['name']}: {len(model['cases'])} cases", file=sys.stderr)

    doc = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "generator": "tests/data/hf/hf_rope_golden.py",
        "input_formula": INPUT_FORMULA,
        "precision": ("`output` and `inv_freq`: HF's own rotary code run with its hard-coded float32 "
                      "(torch.float, torch.float32, Tensor.float()) redirected to float64; "
                      "`hf_float32_max_abs_err`: per position, max |unmodified HF (float32 angles) "
                      "- output| on the same float64 input"),
        "pair_layouts": {
            "half_split": "lane j pairs with lane j + rotary_dim/2 (rotate_half); out_j = x_j cos - x_{j+r/2} sin, "
                          "out_{j+r/2} = x_{j+r/2} cos + x_j sin, angle = pos * inv_freq[j]",
            "interleaved": "lane 2j pairs with lane 2j+1 (rotate_every_two / view_as_complex); "
                           "out_2j = x_2j cos - x_2j+1 sin, out_2j+1 = x_2j+1 cos + x_2j sin",
            "note": "lanes rotary_dim .. head_dim - 1 pass through unchanged; cos and sin are multiplied "
                    "by attention_scaling",
        },
        "models": out_models,
    }
    json.dump(doc, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
