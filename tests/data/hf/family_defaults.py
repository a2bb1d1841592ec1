"""Writes family_defaults.json: what transformers itself decides about the layers of every
family `HfRope::from_config` reads, for `tests/hf_layers.rs`.

For each family, the config class instantiated with no arguments (no Hub needed) as
`save_pretrained` would write it (`to_dict()`), with the layer count and the per-layer facts
the class computes from it: `layer_types` (Gemma's RoPE per layer) and `no_rope_layers`
(Llama 4's NoPE layers). Then which `layer_types` entries a config class accepts, and what
it turns each into (the legacy names are remapped, anything else is a validation error),
and whether a layer count that disagrees with `layer_types` is refused.

    pip install "transformers==5.24.*"   # no torch needed: only the config classes run
    python tests/data/hf/family_defaults.py
"""

import json
import os

import transformers
from transformers import CONFIG_MAPPING
from transformers import configuration_utils

# model_type of the config class (the text config's for multimodal models) -> the family
# name `HfRope::from_config` reads it as (`_text` stripped).
FAMILIES = [
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
    "llama4_text", "qwen2_vl_text", "qwen2_5_vl_text", "qwen3_vl_text", "qwen3_vl_moe_text",
    "phi3", "gpt_neox", "gptj", "deepseek_v2", "deepseek_v3", "gemma3_text", "gemma4_text",
    "gpt_oss",
]


def accepts(model_type, layer_type, n=4):
    """What the config class makes of `layer_types = [layer_type] * n` (None: refused)."""
    try:
        c = CONFIG_MAPPING[model_type](layer_types=[layer_type] * n, num_hidden_layers=n)
    except Exception:  # noqa: BLE001 - any refusal is a refusal
        return None
    return c.layer_types[0]


def main():
    families = {}
    for model_type in FAMILIES:
        config = CONFIG_MAPPING[model_type]()
        families[model_type.removesuffix("_text")] = {
            "config": json.loads(config.to_json_string(use_diff=False)),
            "num_hidden_layers": config.num_hidden_layers,
            "layer_types": getattr(config, "layer_types", None),
            "no_rope_layers": getattr(config, "no_rope_layers", None),
        }
    names = list(configuration_utils.ALLOWED_ATTN_LAYER_TYPES)
    names += list(configuration_utils._LEGACY_LAYER_TYPE_REMAP)
    names += ["weird_attention", "rope", ""]
    layer_types = {name: accepts("llama", name) for name in names}
    # The same answers from a family that reads layer_types for RoPE.
    assert layer_types == {name: accepts("gemma3_text", name) for name in names}
    try:
        CONFIG_MAPPING["llama"](layer_types=["full_attention"] * 3, num_hidden_layers=4)
        count_mismatch_refused = False
    except Exception:  # noqa: BLE001
        count_mismatch_refused = True
    out = {
        "transformers": transformers.__version__,
        "families": families,
        "layer_types": layer_types,
        "count_mismatch_refused": count_mismatch_refused,
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "family_defaults.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
