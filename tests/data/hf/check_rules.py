#!/usr/bin/env python3
"""Re-derives every case of hf_rope_golden.json from the reading rules in README.md.

    python3 tests/data/hf/check_rules.py      # standard library only, no torch, no transformers

It reads each fixture's config.json with the rules written down in README.md ("How HF
transformers 5.x reads each config"), computes inv_freq, attention scaling and the rotation in
binary64 with the formulas of transformers' modeling_rope_utils.py, and compares with the golden
outputs (which come from HF's own code, see hf_rope_golden.py). It is a reference for the Rust
implementation: where it and the JSON agree, the rules are the ones HF applies.
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Class defaults that matter when a key is absent from config.json (transformers 5.x).
DEFAULT_THETA = {"llama4_text": 500000.0, "qwen2_vl_text": 1000000.0, "qwen3_vl_text": 500000.0,
                 "gpt_oss": 150000.0}
DEFAULT_HEAD_DIM = {"llama4_text": 128, "qwen3_vl_text": 128, "gemma3_text": 256, "gpt_oss": 64,
                    "gemma4_text": 256}
DEFAULT_HEADS = {"gemma3_text": 8}
DEFAULT_MAX_POS = {"gemma3_text": 131072, "llama4_text": 131072, "gpt_oss": 131072,
                   "qwen2_vl_text": 32768, "qwen3_vl_text": 128000}
TEXT_MODEL_TYPE = {"llama4": "llama4_text", "qwen2_vl": "qwen2_vl_text", "qwen3_vl": "qwen3_vl_text",
                   "gemma3": "gemma3_text"}
INTERLEAVED = {"gptj", "deepseek_v2", "llama4_text"}
# Families whose rotary honours partial_rotary_factor (compute_default_rope_parameters reads it,
# apply_rotary_pos_emb splits rot/pass): gpt_neox, phi, phi3, stablelm, persimmon, ... Llama-style
# families ignore it for the default type.
PARTIAL_FAMILIES = {"gpt_neox", "phi3", "phi"}


def text_config(raw):
    """The dict the language model is built from, and its model_type."""
    mt = raw["model_type"]
    if mt in TEXT_MODEL_TYPE:
        if "text_config" in raw and raw["text_config"] is not None:
            t = dict(raw["text_config"])
        else:  # 4.x flat composite (Qwen2-VL): the text keys sit at the top level
            t = {k: v for k, v in raw.items() if k not in ("vision_config", "model_type")}
        return t, TEXT_MODEL_TYPE[mt]
    return dict(raw), mt


def rope_dict(t, mt):
    """HF's standardized rope parameters (convert_rope_params_to_dict + standardize_rope_params)."""
    rs = t.get("rope_scaling")
    p = dict(rs) if rs else dict(t.get("rope_parameters") or {})
    if mt == "gpt_neox":  # own convert_rope_params_to_dict: rotary_emb_base / rotary_pct
        p.setdefault("rope_theta", t.get("rotary_emb_base", 10000.0))
        p.setdefault("partial_rotary_factor", t.get("rotary_pct", 0.25))
    else:
        p.setdefault("rope_theta", t.get("rope_theta", DEFAULT_THETA.get(mt, 10000.0)))
        if t.get("partial_rotary_factor") is not None:
            p.setdefault("partial_rotary_factor", t["partial_rotary_factor"])
    p.setdefault("rope_type", p.get("type", "default"))
    if mt == "qwen2_vl_text" and p["rope_type"] == "mrope":
        p["rope_type"] = "default"
    if mt == "phi3" and p["rope_type"] in ("su", "yarn"):
        p["rope_type"] = "longrope"
    if p["rope_type"] in ("llama3", "yarn", "longrope"):
        # The top-level key (a class field for Phi-3, default 4096) overrides the dict's value
        # when the rotary module is built; else the dict's value; else max_position_embeddings.
        if mt == "phi3":
            p["original_max_position_embeddings"] = t.get("original_max_position_embeddings", 4096)
        elif "original_max_position_embeddings" in t:
            p["original_max_position_embeddings"] = t["original_max_position_embeddings"]
        else:
            p.setdefault("original_max_position_embeddings", max_pos(t, mt))
    return p


def max_pos(t, mt):
    if mt == "gptj":
        return t.get("n_positions", 2048)
    return t.get("max_position_embeddings", DEFAULT_MAX_POS.get(mt, 2048))


def head_dim(t, mt):
    if mt == "deepseek_v2":
        return t.get("qk_rope_head_dim", 64)
    if mt == "gptj":
        return t["n_embd"] // t["n_head"]
    hd = t.get("head_dim") or DEFAULT_HEAD_DIM.get(mt)
    return hd or t["hidden_size"] // t.get("num_attention_heads", DEFAULT_HEADS.get(mt))


def plain(dim, base):
    return [1.0 / (base ** ((2 * j) / dim)) for j in range(0, (dim + 1) // 2)]


def inv_freq(p, dim, head, max_position, seq_len):
    """(inv_freq, attention_scaling) as modeling_rope_utils computes them, in binary64."""
    rt = p["rope_type"]
    base = p["rope_theta"]
    if rt == "default":
        return plain(dim, base), 1.0
    if rt == "linear":
        return [f / p["factor"] for f in plain(dim, base)], 1.0
    if rt == "dynamic":
        s = max(seq_len, max_position)
        f = p["factor"]
        return plain(dim, base * ((f * s / max_position) - (f - 1)) ** (dim / (dim - 2))), 1.0
    if rt == "llama3":
        f, lo, hi, old = p["factor"], p["low_freq_factor"], p["high_freq_factor"], p["original_max_position_embeddings"]
        out = []
        for x in plain(dim, base):
            w = 2 * math.pi / x
            if w < old / hi:
                out.append(x)
            elif w > old / lo:
                out.append(x / f)
            else:
                sm = (old / w - lo) / (hi - lo)
                out.append((1 - sm) * x / f + sm * x)
        return out, 1.0
    if rt == "yarn":
        f = p["factor"]
        orig = p["original_max_position_embeddings"]
        if f is None:
            f = max_position / orig
        ms, msa = p.get("mscale"), p.get("mscale_all_dim")

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
        att = p.get("attention_factor")
        if att is None:
            att = get_mscale(f, ms) / get_mscale(f, msa) if (ms and msa) else get_mscale(f)
        bf, bs = p.get("beta_fast") or 32, p.get("beta_slow") or 1

        def corr(n):
            return (dim * math.log(orig / (n * 2 * math.pi))) / (2 * math.log(base))
        lo, hi = corr(bf), corr(bs)
        if p.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001
        out = []
        for j in range(dim // 2):
            pf = base ** ((2 * j) / dim)
            ramp = min(max((j - lo) / (hi - lo), 0.0), 1.0)
            ef = 1 - ramp
            out.append((1.0 / (f * pf)) * (1 - ef) + (1.0 / pf) * ef)
        return out, att
    if rt == "longrope":
        orig = p["original_max_position_embeddings"]
        f = p.get("factor") or max_position / orig
        att = p.get("attention_factor")
        if att is None:
            att = 1.0 if f <= 1.0 else math.sqrt(1 + math.log(f) / math.log(orig))
        ext = p["long_factor"] if seq_len > orig else p["short_factor"]
        return [1.0 / (e * base ** ((2 * j) / dim)) for j, e in zip(range(dim // 2), ext)], att
    if rt == "proportional":
        angles = int(p.get("partial_rotary_factor", 1.0) * head // 2)
        out = [1.0 / (base ** ((2 * j) / head)) for j in range(angles)] + [0.0] * (head // 2 - angles)
        return [x / p.get("factor", 1.0) for x in out], 1.0
    raise ValueError(rt)


def rotate(x, angles, att, rd, layout):
    """x: one row (head_dim); angles: rd/2 angles; lanes >= rd pass through."""
    out = list(x)
    h = rd // 2
    for j in range(h):
        c, s = math.cos(angles[j]) * att, math.sin(angles[j]) * att
        if layout == "interleaved":
            a, b = x[2 * j], x[2 * j + 1]
            out[2 * j], out[2 * j + 1] = a * c - b * s, a * s + b * c
        else:
            a, b = x[j], x[j + h]
            out[j], out[j + h] = a * c - b * s, b * c + a * s
    return out


def mrope_axes(mt, section, half):
    if mt == "qwen2_vl_text":  # contiguous chunks t | h | w (sections repeat mod 3)
        axes = []
        for i, n in enumerate(section):
            axes += [i % 3] * n
        return axes[:half]
    axes = [0] * half       # qwen3_vl_text: interleaved, T by default
    for dim_, off in ((1, 1), (2, 2)):
        for j in range(off, section[dim_] * 3, 3):
            axes[j] = dim_
    return axes


def expected(model, case):
    raw = json.load(open(os.path.join(HERE, model["config"])))
    t, mt = text_config(raw)
    head = head_dim(t, mt)
    mp = max_pos(t, mt)
    lt = case["layer_type"]
    if mt == "gemma3_text":
        # Gemma3TextConfig.convert_rope_params_to_dict: 5.x nested rope_parameters, or the 4.x keys
        nested = t.get("rope_parameters") or {"sliding_attention": {"rope_type": "default"},
                                              "full_attention": {"rope_type": "default"}}
        p = {k: dict(v) for k, v in nested.items()}
        if t.get("rope_scaling") is not None:
            p["full_attention"].update(t["rope_scaling"])
        p["full_attention"].setdefault("rope_theta", t.get("rope_theta", 1000000.0))
        p["sliding_attention"].setdefault("rope_theta", t.get("rope_local_base_freq", 10000.0))
        p = p[lt]
        p.setdefault("rope_type", p.get("type", "default"))
    elif mt == "gemma4_text":
        p = dict(t["rope_parameters"][lt])
        if lt == "full_attention":
            head = t.get("global_head_dim", 512)
            for v in (t.get("per_layer_config") or {}).values():
                head = v.get("head_dim", head)
    elif mt == "gptj":
        p = {"rope_type": "default", "rope_theta": 10000.0}
    else:
        p = rope_dict(t, mt)
    if mt == "gptj":
        rd = t.get("rotary_dim") or head
    elif p["rope_type"] == "proportional":
        rd = head
    elif mt in PARTIAL_FAMILIES:
        rd = int(head * p.get("partial_rotary_factor", 1.0))
    else:
        rd = head
    pos = case["positions"]
    flat = [v for axis in pos for v in axis] if isinstance(pos[0], list) else pos
    seq_len = max(flat) + 1
    inv, att = inv_freq(p, rd if p["rope_type"] != "proportional" else head, head, mp, seq_len)
    rows = []
    for i, x in enumerate(case["input"]):
        if isinstance(pos[0], list):
            section = p.get("mrope_section") or ([16, 24, 24] if mt == "qwen2_vl_text" else [24, 20, 20])
            axes = mrope_axes(mt, section, len(inv))
            angles = [float(pos[axes[j]][i]) * inv[j] for j in range(len(inv))]
        else:
            angles = [float(pos[i]) * f for f in inv]
        rows.append(rotate(x, angles, att, rd, "interleaved" if mt in INTERLEAVED else "half_split"))
    return rows, inv, att, rd


def main():
    golden = json.load(open(os.path.join(HERE, "hf_rope_golden.json")))
    worst = 0.0
    for model in golden["models"]:
        for case in model["cases"]:
            rows, inv, att, rd = expected(model, case)
            d_out = max(abs(a - b) for r, g in zip(rows, case["output"]) for a, b in zip(r, g))
            d_inv = (max(abs(a - b) / max(abs(b), 1e-300) for a, b in zip(inv, case["inv_freq"]))
                     if case["inv_freq"] is not None else 0.0)
            ok = (d_out < 1e-9 and d_inv < 1e-14 and abs(att - case["attention_scaling"]) < 1e-15
                  and rd == case["rotary_dim"] and len(rows) == len(case["output"]))
            worst = max(worst, d_out)
            print(f"{'ok ' if ok else 'BAD'} {model['name']:26s} {case['label']:20s} "
                  f"{str(case['layer_type']):18s} rd={rd:3d} att={att:.6f} "
                  f"max|out-hf|={d_out:.2e} max_rel|inv-hf|={d_inv:.1e}")
            if not ok:
                sys.exit(1)
    print(f"all cases match; worst |out - hf| = {worst:.2e}")


if __name__ == "__main__":
    main()
