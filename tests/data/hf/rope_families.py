#!/usr/bin/env python3
"""Every RoPE family of transformers 5.24, read as transformers reads it (tests/hf_families.rs).

    /tmp/hfenv/bin/python tests/data/hf/rope_families.py   # writes rope_families.json

The list comes from transformers itself: every `model_type` of `CONFIG_MAPPING` whose modeling
module defines a `*RotaryEmbedding` class. For each one, the config class is instantiated with
no arguments (no Hub); the language model's config is `get_text_config(decoder=True)`. The
family's own rotary module is built from that config (the first `*RotaryEmbedding` of the text
model's modeling module that takes it, language-model classes before vision/audio ones) and
called as its model calls it (`forward(x, position_ids[, layer_type])`), then the rotation its
attention module calls (`apply_rotary_pos_emb`, `apply_rotary_pos_emb_interleave`,
`apply_rotary_emb`, ... whichever the attention class's source names) is applied to a fixed
query, in float64 (the float32 spellings redirected as in hf_rope_golden.py).

Where an attention module slices the head before calling the rotation (`q[..., :rotary_dim]`
in Phi, StableLM, Persimmon, ...), the same slice is made here: the lanes past the rotary
width pass through. Which layers rotate is read from the attention module itself: every
attention module of the text model is built on the meta device (no memory) and its forward is
run with the rotation function replaced by a recorder, so a layer whose code skips the
rotation (SmolLM3's NoPE layers, EXAONE 4's global layers, a hybrid model's linear layers)
is recorded as such.

A family whose language model cannot be rotated here is recorded with the reason (its RoPE is
only in a vision / audio encoder, a 2-D / 3-D rotation, a rotary module that takes no position
ids, ...).
"""
import importlib
import inspect
import json
import os
import re
import sys
import warnings

warnings.filterwarnings("ignore")
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import CONFIG_MAPPING  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_rope_golden import float64_mode, jsonable, load_config, make_input  # noqa: E402  (shared)

transformers.utils.logging.set_verbosity_error()
HERE = os.path.dirname(os.path.abspath(__file__))

POSITIONS = [0, 1, 2, 7, 100, 4095, 4096, 32767, 131071, 1000000]
NOT_TEXT_ROTARY = ("Vision", "Audio", "DiT", "Talker", "Perceiver", "Encoder", "Time", "Token2Wav", "BigVGAN")


def modeling_of(cls):
    return importlib.import_module(cls.__module__.replace(".configuration_", ".modeling_"))


def rotary_classes(m):
    rots = [o for n, o in vars(m).items()
            if n.endswith("RotaryEmbedding") and inspect.isclass(o) and o.__module__ == m.__name__]
    return sorted(rots, key=lambda r: any(w in r.__name__ for w in NOT_TEXT_ROTARY))


def attention_classes(m):
    return [o for n, o in vars(m).items()
            if inspect.isclass(o) and o.__module__ == m.__name__ and n.endswith("Attention")
            and issubclass(o, torch.nn.Module)]


SEQ = 5  # the meta run's sequence length (an axis of this size is the sequence axis)


def text_model_module(text):
    return modeling_of(type(text))


def base_model_class(text, m):
    """The text config's base model: AutoModel's class for it, else the modeling module's
    `PreTrainedModel` of that config class with input embeddings (no head)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING
    try:
        return MODEL_MAPPING[type(text)]
    except KeyError:
        pass
    found = [o for n, o in vars(m).items()
             if inspect.isclass(o) and o.__module__ == m.__name__ and n.endswith("Model")
             and getattr(o, "config_class", None) is type(text)]
    found.sort(key=lambda c: (not c.__name__.endswith("TextModel"), len(c.__name__)))
    if not found:
        raise Refused(f"transformers has no base model class for {type(text).__name__}")
    return found[0]


def layer_list(model, n):
    for _, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) == n:
            return mod
    return None


FEED_FORWARD = re.compile(r"(MLP|Mlp|MoE|Moe|MoeBlock|Experts|FeedForward)$")


def meta_run(text):
    try:
        return meta_run_once(text, False)
    except Refused:
        raise
    except Exception:  # noqa: BLE001 - MoE routing reads values (topk, nonzero) meta tensors lack
        return meta_run_once(text, True)


def meta_run_once(text, skip_feed_forward):
    """Builds the text model on the meta device and runs it on SEQ tokens with every rotation
    function of its modeling module replaced by a recorder. Returns, per layer, the calls
    (function name, q shape, non-tensor arguments), and the rotary modules called with their
    arguments' kinds."""
    m = text_model_module(text)
    with torch.device("meta"):
        model = base_model_class(text, m)(text)
    if "input_ids" not in inspect.signature(model.forward).parameters:
        raise Refused(
            f"{type(model).__name__} takes no token ids: its rotary embedding "
            f"({', '.join(r.__name__ for r in rotary_classes(m))}) rotates image patches, audio "
            "frames or other non-text positions (a 2-D / time RoPE), not a text sequence")
    n = getattr(text, "num_hidden_layers", None) or getattr(text, "num_layers", None)
    layers = layer_list(model, n) if n else None
    if layers is None:
        raise RuntimeError("no list of num_hidden_layers decoder layers in the model")
    cur = [None]
    calls = {}
    rot_calls = []
    for i, layer in enumerate(layers):
        layer.register_forward_pre_hook(lambda mod, args, i=i: cur.__setitem__(0, i))
        if skip_feed_forward:
            # The second try: every feed-forward block of the layers passes its input through
            # (they come after the rotation and do not change which layers rotate or how).
            for _, mod in layer.named_modules():
                if FEED_FORWARD.search(type(mod).__name__):
                    mod.forward = lambda x, *a, **k: x
    for name, mod in model.named_modules():
        if type(mod).__name__.endswith("RotaryEmbedding"):
            def hook(mod, args, kwargs, name=name):
                rot_calls.append((name, type(mod).__name__, len(args) + len(kwargs),
                                  [a if isinstance(a, str) else None for a in args]))
            mod.register_forward_pre_hook(hook, with_kwargs=True)
    names = [k for k in dir(m) if re.match(r"_?apply_rotary\w*$|apply_multidimensional_rope$", k)
             and callable(getattr(m, k))]
    saved = {k: getattr(m, k) for k in names}

    def recorder(k):
        def f(*args, **kwargs):
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            other = {str(i): a for i, a in enumerate(args) if not isinstance(a, torch.Tensor)}
            other.update({kk: v for kk, v in kwargs.items() if not isinstance(v, torch.Tensor)})
            calls.setdefault(cur[0], []).append(
                (k, tuple(tensors[0].shape) if tensors else None,
                 [tuple(t.shape) for t in tensors], jsonable(other)))
            return saved[k](*args, **kwargs)
        return f

    for k in names:
        setattr(m, k, recorder(k))
    # One sequence of SEQ tokens: nothing is packed (the check reads a value, which meta
    # tensors do not have).
    import transformers.masking_utils as mu
    saved_packed = mu.find_packed_sequence_indices
    mu.find_packed_sequence_indices = lambda *a, **k: None
    try:
        with torch.no_grad():
            model(input_ids=torch.zeros(1, SEQ, dtype=torch.long, device="meta"), use_cache=False)
    finally:
        for k in names:
            setattr(m, k, saved[k])
        mu.find_packed_sequence_indices = saved_packed
    head_dims = []
    for layer in layers:
        hd = None
        # The attention module's head_dim (a Mamba mixer beside it has one of its own).
        mods = sorted(layer.named_modules(), key=lambda nm: not type(nm[1]).__name__.endswith("Attention"))
        for _, mod in mods:
            if isinstance(getattr(mod, "head_dim", None), int):
                hd = mod.head_dim
                break
        head_dims.append(hd)
    model._layer_head_dims = head_dims
    return [calls.get(i, []) for i in range(n)], rot_calls, model


def find_rotary(model):
    for name, mod in model.named_modules():
        if type(mod).__name__.endswith("RotaryEmbedding"):
            return name, type(mod)
    return None, None


def rotary_forward(rot, x, pos, layer_type):
    params = list(inspect.signature(rot.forward).parameters)
    position_ids = torch.tensor([pos], dtype=torch.int64)
    if "layer_type" in params and layer_type is not None:
        return rot(x, position_ids, layer_type)
    return rot(x, position_ids)


def replay(text, call, layer_type, pos, rot_cls, width):
    """HF's rotation of the fixed input at positions `pos`, through the recorded call."""
    m = text_model_module(text)
    name, q_shape, shapes, other = call
    n = len(pos)
    seq_axes = [a for a, s in enumerate(q_shape[:-1]) if s == SEQ]
    seq_axis = seq_axes[-1]
    q_in = make_input(n, width)
    shape = [1] * len(q_shape)
    shape[seq_axis] = n
    shape[-1] = width
    # rows of q_in along the sequence axis
    q = q_in.reshape([n if a == seq_axis else 1 for a in range(len(q_shape) - 1)] + [width])
    rot = rot_cls(text)
    outs = rotary_forward(rot, q, pos, layer_type)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    outs = list(outs)
    args = [q]
    rest = shapes[1:]
    # The tensors after q: k (same rank and width as q), then the rotary module's outputs in
    # the order the model passes them (matched by shape to the module's outputs).
    oi = 0
    for s in rest:
        if len(s) == len(q_shape) and s[-1] == q_shape[-1] and len(args) == 1 and oi == 0:
            args.append(q.clone())
        else:
            args.append(outs[oi])
            oi += 1
    pos_args = {int(k): v for k, v in other.items() if k.isdigit()}
    kw = {k: v for k, v in other.items() if not k.isdigit()}
    full = []
    ai = 0
    for i in range(len(shapes) + len(pos_args)):
        if i in pos_args:
            full.append(pos_args[i])
        else:
            full.append(args[ai])
            ai += 1
    res = getattr(m, name)(*full, **kw)
    if isinstance(res, (tuple, list)):
        res = res[0]
    res = res.to(torch.float64).reshape(n, width)
    return q_in, res, rot


def pairing(text, call, layer_type, rot_cls, width):
    """Which lanes HF's rotation mixes, from HF's code alone: each unit vector e_k at position
    1 goes through the family's rotation; the lanes it comes out on say the pair layout."""
    out, values = [], []
    for k in range(width):
        e = torch.zeros(1, width, dtype=torch.float64)
        e[0, k] = 1.0
        _, res, _ = replay_input(text, call, layer_type, [1], rot_cls, width, e)
        out.append([j for j in range(width) if res[0, j] != 0.0])
        values.append(res[0].tolist())
    return out, values


def direction(lanes, values):
    """"forward" when the first lane of a pair feeds its partner with +sin (HF's rotate_half,
    rotate_every_two, complex multiplication), "inverse" when with -sin (NanoChat)."""
    for k, ls in enumerate(lanes):
        if ls != [k]:
            return "forward" if values[k][max(ls)] > 0 else "inverse"
    return "forward"


def replay_input(text, call, layer_type, pos, rot_cls, width, q_in):
    global make_input
    saved = make_input
    make_input = lambda n, d: q_in  # noqa: E731
    try:
        return replay(text, call, layer_type, pos, rot_cls, width)
    finally:
        make_input = saved


def classify(lanes):
    """half_split / interleaved / interleaved_hf_order (DeepSeek's permuted output), with the
    rotary width r: every lane that mixes must mix as the layout pairs lanes within the first
    r (the whole width first: zero-frequency pairs of `proportional` do not mix); None when
    the pairs are none of these."""
    w = len(lanes)
    mixing = [k for k in range(w) if lanes[k] != [k]]
    if not mixing:
        return None, 0
    last = max(mixing) + 1
    for r in sorted({w - w % 2, last + last % 2}, reverse=True):
        half = r // 2
        if any(k >= r for k in mixing):
            continue
        if all(lanes[k] == sorted({k, k ^ 1}) for k in mixing):
            # Adjacent pairs say nothing of r: the lanes that turn end where rotation ends.
            return "interleaved", last + last % 2
        if all(lanes[k] == sorted({k, (k + half) % r}) for k in mixing):
            return "half_split", r
        if all(lanes[k] == sorted({k // 2, k // 2 + half}) for k in mixing):
            return "interleaved_hf_order", r
    return None, last


def mrope_axes(text, rot_cls, layer_type, layout, r):
    """For M-RoPE families, the position axis (0 = t, 1 = h, 2 = w) each rotary pair reads,
    from HF's own rotary module: a token at position 1 on one axis and 0 on the others turns
    exactly the pairs of that axis. None where the module takes one position per token (its
    cos then has one row per axis)."""
    rot = rot_cls(text)
    x = torch.zeros(1, 1, 1, 8, dtype=torch.float64)
    params = list(inspect.signature(rot.forward).parameters)
    turned = []
    for a in range(3):
        pos = torch.zeros(3, 1, 1, dtype=torch.int64)
        pos[a] = 1
        try:
            out = rot(x, pos, layer_type) if ("layer_type" in params and layer_type) else rot(x, pos)
        except Exception:  # noqa: BLE001 - a module that takes no 3-axis positions
            return None
        cos = out[0] if isinstance(out, (tuple, list)) else None
        if cos is None or cos.shape[0] != 1:
            return None
        turned.append(cos.reshape(-1))
    # Lane of pair j in cos: j (rotate_half: cat(freqs, freqs)) or 2j (repeat_interleave).
    lane = (lambda j: 2 * j) if layout != "half_split" else (lambda j: j)
    axes = []
    for j in range(r // 2):
        hit = [a for a in range(3) if turned[a][lane(j)] != 1.0]
        axes.append(hit[0] if len(hit) == 1 else 0)  # zero frequency: any axis (t)
    return axes


def reason_without_text_rope(text, m):
    return f"no layer of {type(text).__name__}'s default model calls the rotation"


def positions_for(text):
    pos = list(POSITIONS)
    mp = getattr(text, "max_position_embeddings", None)
    if isinstance(mp, int) and 0 < mp and mp - 1 not in pos and mp - 1 < 2**31:
        pos.append(mp - 1)
    return sorted(pos)


def read_family(text, store):
    calls, rot_calls, model = meta_run(text)
    rot_name, rot_cls = find_rotary(model)
    rot_takes_layer_type = rot_cls is not None and "layer_type" in inspect.signature(rot_cls.forward).parameters
    layer_types = list(getattr(text, "layer_types", None) or [])
    kinds, layers = [], []
    for i, layer_calls in enumerate(calls):
        if not layer_calls:
            layers.append(None)
            continue
        call = layer_calls[0]
        lt = layer_types[i] if (rot_takes_layer_type and i < len(layer_types)) else None
        key = (call[0], lt, call[1][-1])
        if key not in [k["key"] for k in kinds]:
            kinds.append({"key": key, "call": call, "layer_type": lt,
                          "head_dim": model._layer_head_dims[i]})
        layers.append([k["key"] for k in kinds].index(key))
    if not kinds and rot_cls is None:
        raise Refused(f"{type(model).__name__}, the language model, has no rotary embedding: "
                      "the family's RoPE rotates its vision or audio encoder's positions")
    if not kinds:
        raise Refused(reason_without_text_rope(text, text_model_module(text)))
    out_kinds = []
    for kind in kinds:
        name, lt, width = kind["key"]
        call = kind["call"]
        with float64_mode():
            lanes, values = pairing(text, call, lt, rot_cls, width)
            layout, r = classify(lanes)
            turn = direction(lanes, values)
            axes = mrope_axes(text, rot_cls, lt, layout, r) if layout else None
            pos = positions_for(text)
            try:
                q_in, res, rot = replay(text, call, lt, pos, rot_cls, width)
            except Exception:  # noqa: BLE001 - a table of fewer rows (GPT-J): positions within it
                mp = getattr(text, "max_position_embeddings", None) or getattr(text, "n_positions", 2048)
                pos = [p for p in pos if p < mp]
                q_in, res, rot = replay(text, call, lt, pos, rot_cls, width)
        rows = [[float(f"{v:.12g}") for v in row] for row in res.tolist()]
        key = json.dumps(rows, separators=(",", ":"))
        if key not in store:
            store[key] = len(store)
        inv = getattr(rot, f"{lt}_inv_freq", None) if lt else None
        if inv is None:
            inv = getattr(rot, "inv_freq", None)
        scaling = getattr(rot, f"{lt}_attention_scaling", None) if lt else None
        if scaling is None:
            scaling = getattr(rot, "attention_scaling", 1.0)
        head_dim = width if getattr(text, "qk_rope_head_dim", None) else (kind["head_dim"] or width)
        out_kinds.append({
            "function": name,
            "rotary_layer_type": lt,
            "width": width,
            "head_dim": head_dim,
            "pair_layout": layout,
            "direction": turn,
            "rotary_dim": r,
            "mrope_axis_of_pair": axes,
            "rotary_dim_from_inv_freq": 2 * int(inv.shape[0]) if inv is not None else None,
            "attention_scaling": float(scaling),
            "positions": pos,
            "output": store[key],
        })
    return {"layers": layers, "kinds": out_kinds, "rotary_class": rot_cls.__name__ if rot_cls else None}


class Refused(Exception):
    pass


def config_json(cfg, text):
    """The config as a config.json holds it (`to_dict()`, every key): the text config nested
    as `text_config` for composite models (their other sub-configs left out)."""
    t = json.loads(text.to_json_string(use_diff=False))
    if text is cfg:
        return t
    return {"model_type": cfg.model_type, "text_config": t}


NON_ATTENTION = ("linear_attention", "conv")


def reading_rules(rec, text):
    """What `HfRope::from_config` needs to know of a family that its config.json does not say,
    from transformers' answers: the pair layout (from `pairing`), the class defaults of
    base, partial rotary factor and head_dim, and which layers rotate (from the meta run on
    the default config). None, with the reason, when these rules do not describe it."""
    kinds = rec["kinds"]
    layouts = {k["pair_layout"] for k in kinds}
    turns = {k["direction"] for k in kinds}
    if len(turns) != 1:
        return None, "the layer kinds rotate in opposite directions"
    if len(layouts) != 1 or None in layouts:
        return None, ("the layer kinds rotate lanes in different ways or in none of the three "
                      f"pair layouts (half-split, interleaved, DeepSeek's order): {sorted(map(str, layouts))}")
    cls = type(text)
    base = cls()
    rp = getattr(base, "rope_parameters", None) or {}
    nested = bool(rp) and all(isinstance(v, dict) for v in rp.values())
    per_type = any(k["rotary_layer_type"] for k in kinds)
    import dataclasses
    head_default = None
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.name == "head_dim" and isinstance(f.default, int):
                head_default = f.default
    layer_types = list(getattr(text, "layer_types", None) or [])
    layers = rec["layers"]
    n = len(layers)
    attn = [not (i < len(layer_types) and layer_types[i] in NON_ATTENTION) for i in range(n)]
    rotating = [x is not None for x in layers]
    gate = None
    if getattr(text, "attn_layer_indices", None) is not None and rotating == [
            i in text.attn_layer_indices for i in range(n)]:
        # Bamba: the class derives its layer kinds from the list, which the file holds.
        gate = "attention_layer_indices"
    elif rotating == attn:
        gate = "all"
    elif layer_types and rotating == [a and layer_types[i] == "sliding_attention" for i, a in enumerate(attn)]:
        src = "".join(inspect.getsource(a.forward) for a in attention_classes(text_model_module(text))
                      if "forward" in vars(a))
        gate = ("sliding_unless_no_window" if "self.sliding_window is None or self.is_sliding" in src
                else "sliding_only")
    elif getattr(text, "no_rope_layers", None) is not None and rotating == [
            a and bool(text.no_rope_layers[i]) for i, a in enumerate(attn)]:
        gate = "no_rope_layers"
    elif getattr(text, "cross_attention_layers", None) is not None and rotating == [
            a and i not in text.cross_attention_layers for i, a in enumerate(attn)]:
        gate = "not_cross_attention"

    if gate is None:
        return None, ("its layers skip the rotation by a rule of their own: HF rotates layers "
                      f"{[i for i, r in enumerate(rotating) if r][:12]}...")
    # The layer types the class derives when a file has none: every p-th layer full, the
    # others sliding (Cohere 2, EXAONE 4, Gemma-style classes), found by asking the class.
    pattern = None
    try:
        probe = list(cls(num_hidden_layers=12).layer_types or [])
        for p in range(1, 13):
            want = ["full_attention" if (i + 1) % p == 0 else "sliding_attention" for i in range(12)]
            if probe == want and p > 1:
                pattern = p
                break
    except Exception:  # noqa: BLE001 - a class that needs more to instantiate: no pattern
        pass
    # M-RoPE: each pair's axis from HF's module; the crate's MRope says it as a section per
    # axis, in contiguous chunks or cycling t, h, w (tests/hf_families.rs checks the pairs).
    mrope = None
    maps = [k["mrope_axis_of_pair"] for k in kinds if k["mrope_axis_of_pair"]]
    if maps:
        axes = maps[0]
        section = [axes.count(a) for a in range(3)]
        contiguous = axes == sorted(axes)
        cycling = all(a == j % 3 for j, a in enumerate(axes[:3 * min(section)]))
        if not (contiguous or cycling):
            return None, ("M-RoPE whose pairs read the position axes in an order the crate's "
                          f"sections do not express (HF's axis of each pair: {axes[:24]}...)")
        mrope = {"section": section, "interleaved": not contiguous}
    theta = getattr(cls, "default_theta", 10_000.0)
    partial = None if nested else rp.get("partial_rotary_factor")
    return {
        "layout": layouts.pop(),
        "inverse": turns.pop() == "inverse",
        "default_theta": theta if isinstance(theta, (int, float)) else None,
        "partial_rotary_factor": partial,
        "head_dim": head_default,
        "layers": base.num_hidden_layers if hasattr(base, "num_hidden_layers") else n,
        "per_layer_type": per_type,
        "gate": gate,
        "sliding_window_pattern": pattern,
        "mrope": mrope,
        "mla": getattr(text, "qk_rope_head_dim", None) is not None,
    }, None


# Families whose default config transformers 5.24 cannot build a model from (a key its model
# needs is None by default): the one key set, to the value the class documents, so that HF's
# own code runs. The saved config carries it.
OVERRIDES = {
    "ministral": {"head_dim": 128},            # head_dim None; model: self.head_dim ** -0.5
    "hunyuan_v1_dense": {"head_dim": 128},     # same
    "hunyuan_v1_moe": {"head_dim": 128},       # same
    "nemotron": {"num_key_value_heads": 48},   # None; model: num_heads // num_key_value_heads
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention"] * 10 + ["conv", "conv"]},  # None
    "step3p5": {"sliding_window": 4096},       # None; masks need one
    "step3p7": {"text_config": {"sliding_window": 4096}},
    "hunyuan_vl": {"text_config": {"head_dim": 128}},
    "hunyuan_vl_text": {"head_dim": 128},
    # partial_rotary_factor absent: the rotary module's M-RoPE sections [8, 12, 12] then do
    # not fit its 64 frequencies (the published files set 0.5).
    "glm4v": {"text_config": {"partial_rotary_factor": 0.5}},
    "glm4v_text": {"partial_rotary_factor": 0.5},
    "glm_image": {"text_config": {"partial_rotary_factor": 0.5}},
    "glm_image_text": {"partial_rotary_factor": 0.5},
    # attn_layer_indices None: every layer a Mamba layer, none rotates (published Bamba
    # checkpoints list their attention layers).
    "bamba": {"attn_layer_indices": [1, 5]},
}

# Config classes of encoders and other parts that read no text tokens.
NOT_TEXT = re.compile(r"Vision|Audio|VQ|Sam|Perceiver|Encoder|Adapter|MaskDecoder|Prompt|Geometry|"
                      r"DETR|Patcher|BigVGAN|Token2Wav|DiT|Tokenizer|CodePredictor")


# Published config.json files of real checkpoints (tests/data/hf/configs/, written from the
# published files as tests/data/hf/README.md says), read through AutoConfig as a user's load
# reads them.
CHECKPOINTS = [
    ("glm-4-9b-chat-hf.json", "THUDM/glm-4-9b-chat-hf"),
    ("glm-4-9b-0414.json", "THUDM/GLM-4-9B-0414"),
    ("glm-4.5-air.json", "zai-org/GLM-4.5-Air"),
    ("c4ai-command-r-v01.json", "CohereForAI/c4ai-command-r-v01"),
    ("c4ai-command-r7b-12-2024.json", "CohereForAI/c4ai-command-r7b-12-2024"),
    ("stablelm-2-1_6b.json", "stabilityai/stablelm-2-1_6b"),
    ("falcon-7b.json", "tiiuae/falcon-7b"),
    ("olmo-2-1124-7b.json", "allenai/OLMo-2-1124-7B"),
    ("smollm3-3b.json", "HuggingFaceTB/SmolLM3-3B"),
    ("granite-3.1-8b-instruct.json", "ibm-granite/granite-3.1-8b-instruct"),
    ("gemma-2-9b.json", "google/gemma-2-9b"),
    ("exaone-4.0-32b.json", "LGAI-EXAONE/EXAONE-4.0-32B"),
    ("ernie-4.5-0.3b-pt.json", "baidu/ERNIE-4.5-0.3B-PT"),
    ("phi-2.json", "microsoft/phi-2"),
    ("phi-1_5.json", "microsoft/phi-1_5"),
]


def load_checkpoint(name):
    return load_config(f"configs/{name}")[0]


def candidates():
    out = []
    for mt in sorted(CONFIG_MAPPING.keys()):
        cls = CONFIG_MAPPING[mt]
        try:
            m = modeling_of(cls)
        except Exception:  # noqa: BLE001 - a config without a modeling module of its own
            continue
        if rotary_classes(m):
            out.append(mt)
    return out


def one(mt, cfg, store):
    rec = {"model_type": mt, "config_class": type(cfg).__name__}
    try:
        text = cfg.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001
        text = cfg
    rec["text_model_type"] = getattr(text, "model_type", None)
    rec["text_config_class"] = type(text).__name__
    try:
        rec.update(read_family(text, store))
        rec["status"] = "read"
        rules, why = reading_rules(rec, text)
        rec["rules"] = rules
        if rules is None:
            rec["rules_missing"] = why
    except Refused as e:
        own = "takes no token ids" in str(e) or "has no rotary embedding" in str(e)
        if own or NOT_TEXT.search(type(text).__name__):
            rec["status"] = "not_text"
            rec["reason"] = (str(e) if own else
                             f"{type(text).__name__} configures no language model: its rotary embedding "
                             "rotates image patches, audio frames or other non-text positions")
        elif str(e).startswith("transformers has no base model class"):
            rec["status"] = "unverified"
            rec["reason"] = f"{e} (a part of an encoder-decoder or a larger model), so its rotation is not checked against HF's code"
        else:
            rec["status"] = "unverified"
            rec["reason"] = (f"{e}: transformers' default config of this family has no layer "
                             "that rotates, so its rotation is not checked against HF's code")
    except Exception as e:  # noqa: BLE001 - the family's model does not run this way
        rec["status"] = "not_text" if NOT_TEXT.search(type(text).__name__) else "unverified"
        rec["reason"] = ("transformers 5.24 does not run this family's default config "
                         f"({type(e).__name__}: {str(e)[:120]}), so its rotation is not checked against "
                         "HF's code; build the RopeSpec by hand from the modeling code")
    return rec, text


SPECIAL = {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "llama4",
           "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "phi3", "gpt_neox", "gptj",
           "codegen", "deepseek_v2", "deepseek_v3", "gemma3", "gemma4", "gpt_oss"}
# Read by the crate's code of their own (src/hf/families.rs), not by the table.
CRATE_REFUSES = {"dory", "glm4_moe"}  # tests/hf_families.rs: REFUSED


def write_tables(families, checkpoints):
    """The README's family section (between its markers) and tests/data/hf/FAMILIES.md (every
    model type with its status and reason): tables nobody edits by hand."""
    def crate_refuses(f):
        key = (f.get("text_model_type") or f["model_type"]).removesuffix("_text")
        return f["model_type"] in CRATE_REFUSES or (f.get("rules") is None and key not in SPECIAL)

    def why(f):
        return {"dory": "72 layer types, half of them \"mlp\", a name only its class accepts",
                "glm4_moe": "its default head_dim 42 with factor 0.5 gives 21 rotary lanes; "
                            "published GLM-4.5 files read"}.get(f["model_type"], f.get("rules_missing"))

    read = [f for f in families if f["status"] == "read" and not crate_refuses(f)]
    refused = [f for f in families if f["status"] == "read" and crate_refuses(f)]
    unverified = [f for f in families if f["status"] == "unverified"]
    not_text = [f for f in families if f["status"] == "not_text"]
    halves = [f["model_type"] for f in read
              if any(k["pair_layout"] == "interleaved_hf_order" for k in f["kinds"])]
    text = len(read) + len(refused) + len(unverified)
    names = lambda fs: ", ".join(f"`{f['model_type']}`" for f in fs)  # noqa: E731
    section = [
        f"Generated by `tests/data/hf/rope_families.py` from transformers {transformers.__version__}: "
        f"{len(families)} `model_type`s define a `*RotaryEmbedding`; {text} of them configure a "
        f"language model. **{len(read)} are read and rotate as HF's own code does** on every "
        f"layer kind of their default config, at positions up to 1M, in the reference and on "
        f"the GPU ({len(read)} of {text}, {100 * len(read) / text:.0f} %), and so do "
        f"{len(checkpoints)} published checkpoint files "
        f"({', '.join(c['hub_repo'] for c in checkpoints)}). Every model type with its status "
        "and reason: [tests/data/hf/FAMILIES.md](tests/data/hf/FAMILIES.md).",
        "",
        f"- **Read** ({len(read)}): {names(read)}.",
        f"- **HF writes pair halves** (DeepSeek-V3's interleave; `LayerRope::hf_order`, "
        f"`OutputOrder::PairHalves` out of place): {', '.join(f'`{h}`' for h in halves)}.",
        f"- **Refused, with the reason** ({len(refused)}): "
        + "; ".join(f"`{f['model_type']}` ({why(f)[:160]})" for f in refused)
        + ".",
        f"- **Not checked** ({len(unverified)}): transformers {transformers.__version__} does not "
        f"run their default config, or no layer of it rotates (the reason `Error::FamilyNotRead` "
        f"gives says which): "
        f"{names(unverified)}.",
        f"- **No text positions** ({len(not_text)}): vision, audio and other encoders (2-D / 3-D "
        "patch or time positions); refused by name.",
    ]
    readme = os.path.join(HERE, "..", "..", "..", "README.md")
    with open(readme) as f:
        text_md = f.read()
    begin, end = "<!-- families:begin -->\n", "<!-- families:end -->"
    a, b = text_md.index(begin) + len(begin), text_md.index(end)
    with open(readme, "w") as f:
        f.write(text_md[:a] + "\n".join(section) + "\n" + text_md[b:])
    rows = ["# transformers families with a rotary embedding", "",
            f"Generated by `rope_families.py` from transformers {transformers.__version__}; do not "
            "edit. `read`: `HfRope::from_config` reads the default config and every layer "
            "rotates as HF's code does (`tests/hf_families.rs`); the rest are refused with the "
            "reason given.", "",
            "| model_type | text model | status | pair layout | layer kinds | reason |",
            "|---|---|---|---|---|---|"]
    for f in families:
        status = f["status"]
        if status == "read" and crate_refuses(f):
            status = "refused by the crate"
        kinds = f.get("kinds") or []
        layouts = ", ".join(sorted({str(k["pair_layout"]) for k in kinds}))
        lk = ", ".join(sorted({str(k["rotary_layer_type"] or "all") for k in kinds}))
        reason = (f.get("reason") or f.get("rules_missing") or "").replace("|", "/").replace("\n", " ")
        if f["model_type"] in SPECIAL and status == "read":
            reason = "read by the crate's own code for this family"
        rows.append(f"| `{f['model_type']}` | `{f.get('text_model_type')}` | {status} | {layouts} | "
                    f"{lk} | {reason[:200]} |")
    with open(os.path.join(HERE, "FAMILIES.md"), "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    store = {}
    families, configs = [], {}
    for mt in candidates():
        try:
            cfg = CONFIG_MAPPING[mt](**OVERRIDES.get(mt, {}))
        except Exception as e:  # noqa: BLE001
            families.append({"model_type": mt, "status": "refused",
                             "reason": f"the config class does not instantiate with no arguments: {e}"})
            continue
        rec, text = one(mt, cfg, store)
        if mt in OVERRIDES:
            rec["overrides"] = OVERRIDES[mt]
        families.append(rec)
        if rec["status"] == "read":
            configs[mt] = config_json(cfg, text)
        print(f"{mt}: {rec['status']} {rec.get('reason', '')[:100]}", file=sys.stderr)
    checkpoints = []
    for name, hub in CHECKPOINTS:
        cfg = load_checkpoint(name)
        rec, _ = one(cfg.model_type, cfg, store)
        rec["config"] = f"configs/{name}"
        rec["hub_repo"] = hub
        checkpoints.append(rec)
        print(f"{name}: {rec['status']} {rec.get('reason', '')[:100]}", file=sys.stderr)
    outputs = [None] * len(store)
    for k, i in store.items():
        outputs[i] = json.loads(k)
    doc = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "generator": "tests/data/hf/rope_families.py",
        "input_formula": "row i, lane k: sin(0.37 * k + 0.11 * i + 1.0) (float64), i = index of the "
                         "position in the kind's `positions`",
        "families": families,
        "checkpoints": checkpoints,
        "outputs": outputs,
    }
    with open(os.path.join(HERE, "rope_families.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    # The crate's table of reading rules: the text model_type (its `_text` suffix dropped, as
    # `HfRope::from_config` names families) -> rules.
    table, refused = {}, {}
    for rec in families:
        if rec["status"] != "read" or rec["rules"] is None:
            key = (rec.get("text_model_type") or rec["model_type"]).removesuffix("_text")
            refused.setdefault(key, rec.get("reason") or rec.get("rules_missing"))
            refused.setdefault(rec["model_type"].removesuffix("_text"), refused[key])
        else:
            key = rec["text_model_type"].removesuffix("_text")
            if key in table and table[key] != rec["rules"]:
                print(f"{key}: rules differ between model types", file=sys.stderr)
            table[key] = rec["rules"]
    with open(os.path.join(HERE, "..", "..", "..", "src", "hf", "families.json"), "w") as f:
        json.dump({"transformers": transformers.__version__,
                   "generator": "tests/data/hf/rope_families.py", "families": table,
                   "refused": {k: v for k, v in refused.items() if k not in table}},
                  f, indent=0, sort_keys=True)
        f.write("\n")
    write_tables(families, checkpoints)
    with open(os.path.join(HERE, "rope_families_configs.json"), "w") as f:
        json.dump(configs, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
