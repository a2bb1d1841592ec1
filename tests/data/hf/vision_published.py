"""The vision towers of published checkpoint configs, as transformers 5.24 reads them.

For each `config.json` in `tests/data/hf/configs/` whose model has a rotating vision tower
(Qwen2-VL-7B-Instruct as first published and as re-saved by transformers 5, Qwen3-VL-8B-Instruct),
the config is loaded with transformers' own config class, the tower's rotary module is built
from it on the CPU, and its head width, theta and `inv_freq` are recorded with the module's
path and class. `tests/rope_axes/vision.rs` reads the same files with
`RotaryModule::from_hf_vision_config` and compares.

Rerun: `/path/to/python tests/data/hf/vision_published.py` (transformers 5.24.0, torch CPU);
it writes `tests/data/hf/vision_published.json`.
"""

import json
import os

import torch
import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto import modeling_auto

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = [
    "qwen2-vl-7b-instruct.json",
    "qwen2-vl-7b-instruct-v5.json",
    "qwen3-vl-8b-instruct.json",
]


def tower_module(config):
    """The model built on the meta device, its vision rotary module (path, module) and the
    head width of the tower's first attention."""
    cls = modeling_auto.MODEL_MAPPING[type(config)]
    with torch.device("meta"):
        model = cls._from_config(config)
    rotary = next(
        (p, m)
        for p, m in model.named_modules()
        if type(m).__name__.endswith("VisionRotaryEmbedding")
    )
    tower = rotary[0].rsplit(".", 1)[0]
    head_dim = next(
        m.head_dim
        for p, m in model.named_modules()
        if p.startswith(tower + ".") and isinstance(getattr(m, "head_dim", None), int)
    )
    return rotary[0], rotary[1], head_dim


def record(name):
    with open(os.path.join(HERE, "configs", name)) as f:
        raw = json.load(f)
    config = CONFIG_MAPPING[raw["model_type"]].from_dict(raw)
    path, meta, head_dim = tower_module(config)
    # Built again on the CPU from the vision config the model passed it.
    module = type(meta)(meta.config)
    return {
        "file": name,
        "path": path,
        "module": type(module).__name__,
        "inv_freq": [float(x) for x in module.inv_freq.tolist()],
        "theta": float(module.config.rope_parameters["rope_theta"]),
        "head_dim": int(head_dim),
    }


def main():
    out = {
        "transformers": transformers.__version__,
        "script": "tests/data/hf/vision_published.py",
        "towers": [record(n) for n in FILES],
    }
    with open(os.path.join(HERE, "vision_published.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    for t in out["towers"]:
        print(t["file"], t["path"], t["module"], t["head_dim"], t["theta"], len(t["inv_freq"]))


if __name__ == "__main__":
    main()
