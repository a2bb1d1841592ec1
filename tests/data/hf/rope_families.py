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
import copy
import importlib
import itertools
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


# Config classes of text stacks whose forward takes embeddings only (no token ids).
EMBEDS_OF_TEXT = {"BltGlobalTransformerConfig"}
SEQ = 5  # the meta run's sequence length (an axis of this size is the sequence axis)


def text_model_module(text):
    return modeling_of(type(text))


def base_model_class(text, m):
    """The text config's base model: AutoModel's class for it, else the modeling module's
    `PreTrainedModel` of that config class with input embeddings (no head)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING
    try:
        return MODEL_MAPPING[type(text)]
    except Exception:  # noqa: BLE001 - no entry, or an entry naming a class its module lacks
        pass
    found = [o for n, o in vars(m).items()
             if inspect.isclass(o) and o.__module__ == m.__name__ and n.endswith("Model")
             and getattr(o, "config_class", None) is type(text)]
    found.sort(key=lambda c: (not c.__name__.endswith("TextModel"), len(c.__name__)))
    if found:
        return found[0]
    # A part of an encoder-decoder (T5Gemma's decoder, Dia's decoder, BLT's local decoder):
    # the stack its parent model builds from this config, the decoder first.
    from transformers import PreTrainedModel
    parts = [o for n, o in vars(m).items()
             if inspect.isclass(o) and o.__module__ == m.__name__ and issubclass(o, PreTrainedModel)
             and re.search(r"(Decoder|TextEncoder|Encoder|Transformer)$", n)
             and not NOT_TEXT.search(n.removesuffix("Encoder"))]
    parts.sort(key=lambda c: (getattr(c, "config_class", None) is not type(text),
                              not c.__name__.endswith("Decoder"), len(c.__name__)))
    for c in parts:
        try:
            with torch.device("meta"):
                c(text)
        except Exception:  # noqa: BLE001 - a stack built from another config
            continue
        return c
    raise Refused(f"transformers has no base model class for {type(text).__name__}")


def layer_list(model, n):
    """The ModuleList of n decoder layers: the first one, unless it holds a vision / audio
    encoder's layers and another list of n does not (IDEFICS: its vision encoder's 32 layers
    come before its decoder's 32)."""
    found = [mod for _, mod in model.named_modules()
             if isinstance(mod, torch.nn.ModuleList) and len(mod) == n]
    text = [mod for mod in found if not any(w in type(mod[0]).__name__ for w in NOT_TEXT_ROTARY)]
    return (text or found or [None])[0]


FEED_FORWARD = re.compile(r"(MLP|Mlp|MoE|Moe|MoeBlock|Experts|FeedForward)$")


# The meta run's attempts, in order: on the meta device (no memory), then with the parameters
# on the CPU (real values, one decoder layer at a time) for a model whose code reads a value
# (`.item()`, `.tolist()` of an MoE's routing); each first with token ids, then with
# `inputs_embeds` for a text model whose embedding takes other ids (Kyutai's 33 codebook
# channels, CSM's codebook offsets) or that embeds no tokens itself (Qwen3-Omni's talker).
ATTEMPTS = [("meta", False, "ids"), ("meta", True, "ids"), ("meta", False, "embeds"),
            ("meta", True, "embeds"), ("cpu", True, "ids"), ("cpu", True, "embeds")]


def passthrough(mod):
    """A feed-forward block's forward that returns its input, in the shape its caller unpacks:
    a block whose forward returns a tuple (`return hidden_states, router_scores`) gives the
    input first and None for the rest."""
    import ast
    import textwrap
    k = 1
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(type(mod).forward)))
        rets = [n.value for n in ast.walk(tree) if isinstance(n, ast.Return) and n.value is not None]
        if rets and all(isinstance(r, ast.Tuple) for r in rets):
            k = len(rets[-1].elts)
    except (OSError, TypeError, SyntaxError):
        pass
    return (lambda x, *a, **kw: x) if k == 1 else (lambda x, *a, **kw: (x,) + (None,) * (k - 1))


def meta_run(text):
    import torch.fx.experimental._config as fx_config
    # MoE routing's `x[mask]` / `nonzero` on meta tensors: a fake count (every element
    # non-zero) instead of an error; routing decides no rotation.
    saved = fx_config.meta_nonzero_assume_all_nonzero
    fx_config.meta_nonzero_assume_all_nonzero = True
    try:
        for i, (device, skip_feed_forward, inputs) in enumerate(ATTEMPTS):
            try:
                return meta_run_once(text, skip_feed_forward, device, inputs)
            except Refused:
                raise
            except Exception:  # noqa: BLE001 - the next attempt
                if i == len(ATTEMPTS) - 1:
                    raise
    finally:
        fx_config.meta_nonzero_assume_all_nonzero = saved


class _ParametersOnMeta:
    """Builds a model with its parameters on the meta device and its buffers real, on the CPU
    (the rotary modules' inv_freq as their own code computes it)."""
    def __enter__(self):
        self.saved = torch.nn.Module.register_parameter
        saved = self.saved

        def register(mod, name, param):
            saved(mod, name, param)
            if param is not None and not param.is_meta:
                mod._parameters[name] = torch.nn.Parameter(param.to("meta"), requires_grad=False)
        torch.nn.Module.register_parameter = register
        return self

    def __exit__(self, *exc):
        torch.nn.Module.register_parameter = self.saved


CPU_LAYER_LIMIT = 1_500_000_000  # parameters of one layer given real values (6 GB in float32)


def _materialize(module, skip=(), whole=True):
    """Gives the meta parameters of module (its own only unless whole; none of the modules in
    skip) real, small random values on the CPU; returns what to put back."""
    back = []
    total = 0
    skip_ids = {id(c) for s in skip for c in s.modules()}
    for mod in (module.modules() if whole else [module]):
        if id(mod) in skip_ids:
            continue
        for name, p in list(mod._parameters.items()):
            if p is not None and p.is_meta:
                total += p.numel()
                if total > CPU_LAYER_LIMIT:
                    for m2, n2, p2 in back:
                        m2._parameters[n2] = p2
                    raise RuntimeError(f"{type(module).__name__}: over {CPU_LAYER_LIMIT} parameters")
                if p.dtype.is_floating_point:
                    real = torch.randn(p.shape, dtype=p.dtype) * 0.02
                else:
                    real = torch.zeros(p.shape, dtype=p.dtype)
                mod._parameters[name] = torch.nn.Parameter(real, requires_grad=False)
                back.append((mod, name, p))
    return back


def _text_width(model, text):
    emb = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    for mod in ([emb] if emb is not None else []) + list(emb.modules() if emb is not None else []):
        w = getattr(mod, "weight", None)
        if isinstance(mod, torch.nn.Embedding) and w is not None:
            return w.shape[-1]
    return text.hidden_size


# Inputs besides the tokens that a text model cannot run without: IDEFICS' decoder interleaves
# gated cross-attention layers that read image states (one image's encoder output here; the
# cross-attention does not rotate).
def _idefics_inputs(model, text, device):
    v = text.vision_config
    n = (v.image_size // v.patch_size) ** 2 + 1
    return {"image_encoder_embeddings": torch.zeros(1, 1, n, v.embed_dim, device=device),
            "image_attention_mask": torch.ones(1, SEQ, 1, dtype=torch.long, device=device)}


EXTRA_INPUTS = {"IdeficsModel": _idefics_inputs}


def meta_run_once(text, skip_feed_forward, device="meta", inputs="ids"):
    """Builds the text model on the meta device and runs it on SEQ tokens with every rotation
    function of its modeling module replaced by a recorder. Returns, per layer, the calls
    (function name, q shape, non-tensor arguments), and the rotary modules called with their
    arguments' kinds."""
    m = text_model_module(text)
    if device == "meta":
        with torch.device("meta"):
            model = base_model_class(text, m)(text)
    else:
        with _ParametersOnMeta():
            model = base_model_class(text, m)(text)
    params = inspect.signature(model.forward).parameters
    if "input_ids" not in params and "decoder_input_ids" in params and hasattr(model, "get_decoder"):
        # A speech-to-text encoder-decoder (Moonshine): its text decoder reads the token ids and
        # rotates their positions; it runs on its own, beside encoder states (model_inputs).
        model = model.get_decoder()
        params = inspect.signature(model.forward).parameters
    # BLT's global transformer reads embeddings of byte patches, a 1-D sequence of its text:
    # run on embeddings. Other models without token ids read images or sound.
    embeds = type(text).__name__ in EMBEDS_OF_TEXT
    if "input_ids" not in params and not embeds:
        raise Refused(
            f"{type(model).__name__} takes no token ids: its rotary embedding "
            f"({', '.join(r.__name__ for r in rotary_classes(m))}) rotates image patches, audio "
            "frames or other non-text positions (a 2-D / time RoPE), not a text sequence")
    if not any(type(mod).__name__.endswith("RotaryEmbedding") for mod in model.modules()):
        # Moshi's depth decoder builds its layers with use_rope=False; Granite 4.0-H's and
        # Zamba 2's default configs build no RoPE.
        raise Refused(f"{type(model).__name__}, the model of this config, has no rotary "
                      "embedding: its layers do not rotate (the family's RoPE is in another "
                      "of its models or encoders, or in a setting the default leaves off)")
    n = getattr(text, "num_hidden_layers", None) or getattr(text, "num_layers", None)
    layers = layer_list(model, n) if n else None
    if not n:
        parts = sorted({name.rsplit(".", 1)[0] if "." in name else "(model)"
                        for name, mod in model.named_modules()
                        if type(mod).__name__.endswith("RotaryEmbedding")})
        raise Refused(f"no single layer list: {type(text).__name__} has no num_hidden_layers, its "
                      f"model rotates in parts with layers and a rotary module of their own "
                      f"({', '.join(parts)})")
    # No list of n layers (LongCat-Flash: two attention sublayers in each of n / 2 layers;
    # HRM: two stacks run in cycles, n the number of attention calls): each rotation is
    # assigned to the cache layer its attention writes into (`cache.update(..., layer_idx)`),
    # the index num_hidden_layers counts.
    by_cache = layers is None
    cur = ["pending" if by_cache else None]
    calls = {}
    rot_calls = []
    rot_outputs, rot_labels, call_labels = [], {}, {}
    for i, layer in enumerate(layers or []):
        layer.register_forward_pre_hook(lambda mod, args, i=i: cur.__setitem__(0, i))
    skipped = []
    if skip_feed_forward:
        # The second try: every feed-forward block of the layers passes its input through
        # (they come after the rotation and do not change which layers rotate or how).
        for layer in (layers if layers is not None else [model]):
            for _, mod in layer.named_modules():
                if FEED_FORWARD.search(type(mod).__name__):
                    mod.forward = passthrough(mod)
                    skipped.append(mod)
    if device == "cpu":
        torch.manual_seed(0)
        blocks = list(layers) if layers is not None else [
            mod for mod in model.modules()
            if isinstance(getattr(mod, "layer_idx", None), int) and mod is not model]
        inner = {id(x) for b in blocks for x in list(b.modules())[1:]}
        blocks = [b for b in blocks if id(b) not in inner]
        within = {id(x) for b in blocks for x in b.modules()}
        # The modules outside the layers (embeddings, norms, a vision tower the run does not
        # call) get values when they run, each its own parameters.
        outside = [mod for mod in model.modules() if id(mod) not in within
                   and any(p is not None for p in mod._parameters.values())]
        for b in blocks + outside:
            held = {}

            def pre(mod, args, held=held, whole=b in blocks):
                held["back"] = _materialize(mod, skipped, whole)

            def post(mod, args, out, held=held):
                for m2, n2, p2 in held.pop("back", []):
                    m2._parameters[n2] = p2
            b.register_forward_pre_hook(pre)
            b.register_forward_hook(post)
    for name, mod in model.named_modules():
        if type(mod).__name__.endswith("RotaryEmbedding"):
            def hook(mod, args, kwargs, name=name):
                rot_calls.append((name, type(mod).__name__, len(args) + len(kwargs),
                                  [a if isinstance(a, str) else None for a in args]))
            mod.register_forward_pre_hook(hook, with_kwargs=True)

            def out_hook(mod, args, kwargs, out):
                # The label the module was called with (`forward(x, position_ids, layer_type)`),
                # per output tensor: a layer's rotation reads it from the cos / sin it is given.
                lt = kwargs.get("layer_type", args[2] if len(args) > 2 else None)
                if isinstance(lt, str):
                    for t in (out if isinstance(out, (tuple, list)) else (out,)):
                        if isinstance(t, torch.Tensor):
                            rot_outputs.append(t)  # kept alive: ids stay unique
                            rot_labels[id(t)] = lt
            mod.register_forward_hook(out_hook, with_kwargs=True)
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
            call_labels.setdefault(cur[0], []).append(
                next((rot_labels[id(t)] for t in tensors if id(t) in rot_labels), None))
            return saved[k](*args, **kwargs)
        return f

    for k in names:
        setattr(m, k, recorder(k))
    kwargs = model_inputs(model, text, device)
    if inputs == "embeds" and "input_ids" in kwargs:
        del kwargs["input_ids"]
        kwargs["inputs_embeds"] = torch.zeros(1, SEQ, _text_width(model, text), device=device)
    if by_cache:
        from transformers.cache_utils import DynamicCache

        class RecordingCache(DynamicCache):
            def update(self, key_states, value_states, layer_idx, *a, **k):
                calls.setdefault(layer_idx, []).extend(calls.pop("pending", []))
                return super().update(key_states, value_states, layer_idx, *a, **k)
        params = inspect.signature(model.forward).parameters
        kwargs["use_cache"] = True
        kwargs["cache" if "cache" in params else "past_key_values"] = RecordingCache(config=text)
    if type(model).__name__ in EXTRA_INPUTS:
        kwargs.update(EXTRA_INPUTS[type(model).__name__](model, text, device))
    # One sequence of SEQ tokens: nothing is packed (the check reads a value, which meta
    # tensors do not have).
    import transformers.masking_utils as mu
    saved_packed = mu.find_packed_sequence_indices, mu._ignore_causal_mask_sdpa
    mu.find_packed_sequence_indices = lambda *a, **k: None
    # Nor is a padding mask looked at to skip the causal mask (the same reason).
    mu._ignore_causal_mask_sdpa = lambda *a, **k: False
    try:
        with torch.no_grad():
            model(**kwargs)
    finally:
        for k in names:
            setattr(m, k, saved[k])
        mu.find_packed_sequence_indices, mu._ignore_causal_mask_sdpa = saved_packed
    head_dims = []
    for layer in (layers if layers is not None else [None] * n):
        hd = None
        # The attention module's head_dim (a Mamba mixer beside it has one of its own).
        mods = [] if layer is None else sorted(
            layer.named_modules(), key=lambda nm: not type(nm[1]).__name__.endswith("Attention"))
        for _, mod in mods:
            if isinstance(getattr(mod, "head_dim", None), int):
                hd = mod.head_dim
                break
        head_dims.append(hd)
    model._layer_head_dims = head_dims
    # Per layer, the layer type its first rotation's cos / sin were made for (None when the
    # rotary module takes none, or the layer reshaped them first).
    model._layer_rope_labels = [(call_labels.get(i) or [None])[0] for i in range(n)]
    return [calls.get(i, []) for i in range(n)], rot_calls, model


def model_inputs(model, text, device="meta"):
    """SEQ token ids, and what a decoder of an encoder-decoder needs beside them: the
    encoder's output (its width: the config's cross-attention width, else the model's).
    Dia's decoder reads one id per audio channel."""
    params = inspect.signature(model.forward).parameters
    ids = (1, SEQ, text.num_channels) if hasattr(text, "num_channels") and hasattr(text, "cross_hidden_size") else (1, SEQ)
    inputs = {"input_ids": torch.zeros(*ids, dtype=torch.long, device=device), "use_cache": False}
    if "input_ids" not in params or "patch_embeds" in params:
        # A stack of a byte-level model (BLT) reads embeddings: of bytes (its local decoder,
        # beside one patch per cross_attn_k bytes) or of byte patches (its global transformer).
        width = getattr(text, "encoder_cross_output_size", None) or text.hidden_size
        inputs["inputs_embeds"] = torch.zeros(1, SEQ, width, device=device)
        if "patch_embeds" in params:
            inputs["patch_embeds"] = torch.zeros(1, 1, text.hidden_size_global, device=device)
        if "input_ids" not in params:
            del inputs["input_ids"]
    for key in ("encoder_hidden_states", "last_hidden_state"):
        if key in params:
            width = next((getattr(text, k) for k in ("cross_attention_hidden_size", "cross_hidden_size",
                                                     "input_size", "hidden_size")
                          if isinstance(getattr(text, k, None), int)), None)
            inputs[key] = torch.zeros(1, SEQ, width, device=device)
    return inputs


def find_rotary(model, rot_calls=()):
    """The rotary module the text model calls (the first one its run called: a protein,
    vision or audio encoder's module inside the same model is not called on token ids),
    else the first one it holds."""
    mods = dict(model.named_modules())
    for name, _, _, _ in rot_calls:
        if name in mods:
            return name, type(mods[name])
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
    if mixing[0] != 0:
        # The first pair (frequency 1) always turns at position 1: rotation that starts past
        # lane 0 is a trailing slice (DeepSeek-V4's [nope | rope] head), none of the layouts.
        return None, last
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
    # Lane of pair j in cos: j where the module writes cat(freqs, freqs) (rotate_half, and
    # DeepSeek's interleave, which permutes q instead), 2j where it repeats each frequency
    # (repeat_interleave): read from cos itself, all axes at position 1.
    pos = torch.ones(3, 1, 1, dtype=torch.int64)
    out = rot(x, pos, layer_type) if ("layer_type" in params and layer_type) else rot(x, pos)
    c = out[0].reshape(-1)
    h = c.shape[0] // 2
    repeated = bool((c[0::2] == c[1::2]).all()) and not bool((c[:h] == c[h:]).all())
    lane = (lambda j: 2 * j) if repeated else (lambda j: j)
    axes = []
    for j in range(r // 2):
        hit = [a for a in range(3) if turned[a][lane(j)] != 1.0]
        axes.append(hit[0] if len(hit) == 1 else 0)  # zero frequency: any axis (t)
    return axes


def positions_for(text):
    pos = list(POSITIONS)
    mp = getattr(text, "max_position_embeddings", None)
    if isinstance(mp, int) and 0 < mp and mp - 1 not in pos and mp - 1 < 2**31:
        pos.append(mp - 1)
    return sorted(pos)


def read_family(text, store):
    calls, rot_calls, model = meta_run(text)
    rot_name, rot_cls = find_rotary(model, rot_calls)
    rot_takes_layer_type = rot_cls is not None and "layer_type" in inspect.signature(rot_cls.forward).parameters
    layer_types = list(getattr(text, "layer_types", None) or [])
    kinds, layers = [], []
    for i, layer_calls in enumerate(calls):
        if not layer_calls:
            layers.append(None)
            continue
        call = layer_calls[0]
        # The layer type the model called the rotary module with for this layer's cos / sin
        # (DeepSeek-V4 keys its rotary module by "main" / "compress", not by layer_types),
        # else the layer's entry of layer_types.
        lt = model._layer_rope_labels[i] if rot_takes_layer_type else None
        if lt is None and rot_takes_layer_type and i < len(layer_types):
            lt = layer_types[i]
        key = (call[0], lt, call[1][-1])
        if key not in [k["key"] for k in kinds]:
            kinds.append({"key": key, "call": call, "layer_type": lt,
                          "head_dim": model._layer_head_dims[i]})
        layers.append([k["key"] for k in kinds].index(key))
    if not kinds:
        # (A model without a rotary module was refused before the run.)
        raise Refused(f"no layer of {type(text).__name__}'s default model calls the rotation")
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
        if layout is None:
            kind_note = {"rotated_lanes": [min(k for k in range(width) if lanes[k] != [k]), r]
                         if any(lanes[k] != [k] for k in range(width)) else None}
        else:
            kind_note = {}
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
            **kind_note,
        })
    return {"layers": layers, "kinds": out_kinds, "rotary_class": rot_cls.__name__ if rot_cls else None}


class Refused(Exception):
    pass


def config_json(cfg, text):
    """The config as a config.json holds it (`to_dict()`, every key): the text config nested
    as the model's config nests it for composite models (their other sub-configs left out)."""
    t = json.loads(text.to_json_string(use_diff=False))
    if text is cfg or type(text) is type(cfg):
        return t
    # Under the key the model's config holds it: `text_config`, or an encoder-decoder's
    # `decoder` (T5Gemma) or `decoder_config` (Dia); `text_config` where it is deeper
    # (Qwen2.5-Omni's thinker).
    key = next((k for k, v in vars(cfg).items() if v is text), "text_config")
    return {"model_type": cfg.model_type, key: t}


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
    tail = [k["rotated_lanes"] for k in kinds if (k.get("rotated_lanes") or [0])[0] > 0]
    if tail:
        return None, (f"HF rotates a trailing slice of the head, lanes {tail[0][0]}..{tail[0][1]} of "
                      f"{kinds[0]['width']} ([nope | rope]), which no pair layout of the crate describes")
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
    own = (getattr(text, "rope_parameters", None) or {}).get("mrope_section")
    if own is not None and len(own) != 3:
        return None, (f"M-RoPE over {len(own)} position axes (mrope_section {own}, HunYuan's "
                      "XD-RoPE); the crate's M-RoPE has three (t, h, w)")
    # M-RoPE: each pair's axis from HF's module; the crate's MRope says it as a section per
    # axis, in contiguous chunks or cycling t, h, w (tests/hf_families.rs checks the pairs).
    mrope = None
    maps = [k["mrope_axis_of_pair"] for k in kinds if k["mrope_axis_of_pair"]]
    if maps:
        axes = maps[0]
        section = [axes.count(a) for a in range(3)]
        t, h, w = section
        if axes == sorted(axes):
            order = "chunks"
        elif all(a == j % 3 for j, a in enumerate(axes[:3 * min(section)])):
            order = "interleaved"
        elif h == w and axes == [1, 2] * h + [0] * t:
            order = "hw_then_t"
        else:
            return None, ("M-RoPE whose pairs read the position axes in an order the crate's "
                          f"sections do not express (HF's axis of each pair: {axes[:24]}...)")
        # The axis each entry of the config's mrope_section counts (ERNIE 4.5 VL: h, w, t),
        # from HF's module: a file's section with two more t pairs and one fewer h and w
        # pairs, written in each key order, turns those counts in one order only.
        probe = [t + 2, h - 1, w - 1] if min(h, w) > 1 else None
        keys = None
        for p in itertools.permutations("thw"):
            if probe is None:
                break
            k = next(k for k in kinds if k["mrope_axis_of_pair"])
            moved = copy.deepcopy(text)
            rp = dict(moved.rope_parameters)
            rp["mrope_section"] = [probe["thw".index(a)] for a in p]
            moved.rope_parameters = rp
            try:
                with float64_mode():
                        got = mrope_axes(moved, getattr(text_model_module(text), rec["rotary_class"]),
                                     k["rotary_layer_type"], k["pair_layout"], k["rotary_dim"])
            except Exception:  # noqa: BLE001 - an order the module refuses
                continue
            if got and [got.count(a) for a in range(3)] == probe:
                keys = "".join(p)
                break
        if keys is None:
            return None, "M-RoPE whose mrope_section key order HF's module does not reveal"
        mrope = {"section": section, "order": order, "section_keys": keys}
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
        # The class's other names of standard keys (DBRX's `d_model` for hidden_size, JetMoe's
        # `kv_channels` for head_dim), which config.json files use.
        "attribute_map": dict(getattr(cls, "attribute_map", {}) or {}),
        # Dory: config.json lists (attention, "mlp") blocks, two per layer, and doubles
        # num_hidden_layers; the class takes every other block and halves it.
        "mlp_blocks": mlp_blocks(text),
        # An odd int(head_dim * partial_rotary_factor) that HF's code runs (GLM-4.5's default):
        # its frequencies are base^(-2j / odd), and it rotates the next even width.
        "odd_width_pads": odd_width_pads(text, kinds),
    }, None


def mlp_blocks(text):
    saved = json.loads(text.to_json_string(use_diff=False))
    lt = saved.get("layer_types") or []
    return (len(lt) == 2 * len(getattr(text, "layer_types", None) or [None]) and
            all(b == "mlp" for b in lt[1::2]))


def odd_width_pads(text, kinds):
    factor = ((getattr(text, "rope_parameters", None) or {}).get("partial_rotary_factor")
              or getattr(text, "partial_rotary_factor", None))
    if not isinstance(factor, float):
        return False
    odd = [int(k["head_dim"] * factor) for k in kinds]
    return all(o % 2 == 1 and k["rotary_dim"] == o + 1 for o, k in zip(odd, kinds))


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
    # head_dim None (as ministral), and mrope_section None (the rotary module takes one
    # position row per section):
    # tencent/HunyuanOCR's rope_scaling has "xdrope_section": [16, 16, 16, 16] (HF reads it as
    # mrope_section), with "head_dim": 128.
    "hunyuan_vl": {"text_config": {"head_dim": 128, "rope_parameters": {"mrope_section": [16, 16, 16, 16]}}},
    "hunyuan_vl_text": {"head_dim": 128, "rope_parameters": {"mrope_section": [16, 16, 16, 16]}},
    # partial_rotary_factor absent: the rotary module's M-RoPE sections [8, 12, 12] then do
    # not fit its 64 frequencies (the published files set 0.5).
    "glm4v": {"text_config": {"partial_rotary_factor": 0.5}},
    "glm4v_text": {"partial_rotary_factor": 0.5},
    "glm_image": {"text_config": {"partial_rotary_factor": 0.5}},
    "glm_image_text": {"partial_rotary_factor": 0.5},
    # attn_layer_indices None: every layer a Mamba layer, none rotates (published Bamba
    # checkpoints list their attention layers).
    "bamba": {"attn_layer_indices": [1, 5]},
    # vocabulary_map None: the model reads its "<image>" entry at init (facebook/chameleon-7b's
    # map, the tokenizer's vocabulary, has "<image>": 8711; its other entries are read only
    # with images).
    "chameleon": {"vocabulary_map": {"<image>": 8711}},
    # DbrxAttention stores attn_config.rope_theta (unused: the rotary module reads
    # rope_parameters), a key DbrxAttentionConfig does not declare, and clamps q/k/v with
    # clip_qkv (None: torch refuses a clamp with no bound); databricks/dbrx-instruct's
    # attn_config has "clip_qkv": 8, "rope_theta": 500000.
    "dbrx": {"attn_config": {"clip_qkv": 8, "rope_theta": 500000}},
    # mlp_layer_types None (the decoder layer indexes it): HF's converter
    # (convert_deepseek_ocr2_weights_to_hf.py) writes ["dense"] * first_k_dense_replace +
    # ["sparse"] * the rest; deepseek-ai/DeepSeek-OCR-2 has first_k_dense_replace 1.
    "deepseek_ocr2": {"text_config": {"mlp_layer_types": ["dense"] + ["sparse"] * 31}},
    "deepseek_ocr2_text": {"mlp_layer_types": ["dense"] + ["sparse"] * 31},
    # vocab_size None (the class documents EsmConfig(vocab_size=33)), pad_token_id None (the
    # embeddings derive position ids from it), and the default position_embedding_type
    # "absolute" (ESM-1b) has no RoPE: the ESM-2 files (facebook/esm2_t33_650M_UR50D) have
    # "vocab_size": 33, "pad_token_id": 1, "position_embedding_type": "rotary".
    "esm": {"vocab_size": 33, "pad_token_id": 1, "position_embedding_type": "rotary"},
    # num_experts / top_k_experts / moe_intermediate_size None: every decoder layer builds its
    # router and experts from them; google/diffusiongemma-26B-A4B-it's text_config has
    # "num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704.
    "diffusion_gemma": {"text_config": {"num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704}},
    "diffusion_gemma_text": {"num_experts": 128, "top_k_experts": 8, "moe_intermediate_size": 704},
    # head_dim absent: hidden_size // heads = 4096 // 96 = 42, whose half (21 lanes) does not
    # hold the M-RoPE sections [8, 12, 12]; zai-org/GLM-4.5V's text_config has "head_dim": 128
    # (as GLM-4.5-Air's, tests/data/hf/configs/glm-4.5-air.json).
    "glm4v_moe": {"text_config": {"head_dim": 128}},
    "glm4v_moe_text": {"head_dim": 128},
    # The decoder layers read num_key_value_heads, a key MoonshineStreamingConfig does not
    # declare; UsefulSensors/moonshine-streaming-tiny's config.json has "num_key_value_heads": 8.
    "moonshine_streaming": {"num_key_value_heads": 8},
    # The QSA indexer keys (None) size every indexed-attention layer's indexer, which the
    # model builds whether or not they are set; Qwen/Qwen4-Exp's text_config has
    # "indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 128,
    # "indexer_budget": 2048, "indexer_compress_ratio": 4, and (the class then checks that the
    # rotary lanes fit the index head) rope_parameters' "partial_rotary_factor": 0.25.
    "qwen4_exp": {"text_config": {"indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 128,
                                  "indexer_budget": 2048, "indexer_compress_ratio": 4,
                                  "rope_parameters": {"partial_rotary_factor": 0.25}}},
    "qwen4_exp_text": {"indexer_n_heads": 4, "indexer_kv_heads": 1, "indexer_head_dim": 128,
                       "indexer_budget": 2048, "indexer_compress_ratio": 4,
                       "rope_parameters": {"partial_rotary_factor": 0.25}},
    # n_routed_experts / n_shared_experts / num_experts_per_tok None: the experts cannot be
    # built (rednote-hilab/dots.llm1.inst: 128 routed, 2 shared, 6 per token).
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    # head_dim absent: hidden_size 2048 / 28 heads gives 73 lanes, an odd width the rotary
    # module's cos (74) does not fit (Qwen/Qwen3-Omni-30B-A3B-Instruct: head_dim 128).
    "qwen3_omni_moe": {"thinker_config": {"text_config": {"head_dim": 128}}},
    "qwen3_omni_moe_thinker": {"text_config": {"head_dim": 128}},
    "qwen3_omni_moe_text": {"head_dim": 128},
    # shared_expert_intermediate_size: not a field of the class, its model reads it
    # (Qwen/Qwen3-Omni-30B-A3B-Instruct's talker text_config: 768).
    "qwen3_omni_moe_talker_text": {"shared_expert_intermediate_size": 768},
    # n_routed_experts / n_shared_experts / num_experts_per_tok None: the experts cannot be
    # built (rednote-hilab/dots.llm1.inst: 128 routed, 2 shared, 6 per token).
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
    # head_dim absent: hidden_size 2048 / 28 heads gives 73 lanes, an odd width the rotary
    # module's cos (74) does not fit (Qwen/Qwen3-Omni-30B-A3B-Instruct: head_dim 128).
    "qwen3_omni_moe": {"thinker_config": {"text_config": {"head_dim": 128}}},
    "qwen3_omni_moe_thinker": {"text_config": {"head_dim": 128}},
    "qwen3_omni_moe_text": {"head_dim": 128},
    # shared_expert_intermediate_size: not a field of the class, its model reads it
    # (Qwen/Qwen3-Omni-30B-A3B-Instruct's talker text_config: 768).
    "qwen3_omni_moe_talker_text": {"shared_expert_intermediate_size": 768},
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


def held_by_parent(part):
    """The instance of `part`'s class that the default config of its parent model holds
    (a config class of the same model folder whose sub-configs reach it), or None."""
    folder = type(part).__module__.rsplit(".", 1)[0]
    for cls in dict.fromkeys(CONFIG_MAPPING.values()):
        if cls is type(part) or cls.__module__.rsplit(".", 1)[0] != folder:
            continue
        try:
            todo = [cls()]
            text = todo[0].get_text_config(decoder=True)
        except Exception:  # noqa: BLE001
            continue
        if type(text) is type(part):
            return text
        for _ in range(3):
            found = [v for c in todo for v in vars(c).values() if isinstance(v, transformers.PreTrainedConfig)]
            for v in found:
                if type(v) is type(part):
                    return v
            todo = found
    return None


def one(mt, cfg, store):
    rec = {"model_type": mt, "config_class": type(cfg).__name__}
    try:
        text = cfg.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001
        text = cfg
    rec["text_model_type"] = getattr(text, "model_type", None)
    rec["text_config_class"] = type(text).__name__
    try:
        try:
            rec.update(read_family(text, store))
        except Refused as e:
            # A part whose stack needs what its parent config sets on it (T5Gemma's
            # `dropout_rate`): the part as the parent's default config holds it.
            held = held_by_parent(text)
            if held is None or not str(e).startswith("transformers has no base model class"):
                raise
            text = held
            rec.update(read_family(text, store))
        rec["status"] = "read"
        rules, why = reading_rules(rec, text)
        rec["rules"] = rules
        if rules is None:
            rec["rules_missing"] = why
    except Refused as e:
        own = "takes no token ids" in str(e) or "has no rotary embedding" in str(e)
        if "the model of this config, has no rotary embedding" in str(e):
            rec["status"] = "no_rope"
            rec["reason"] = str(e)
            return rec, text
        if own or NOT_TEXT.search(type(text).__name__):
            rec["status"] = "not_text"
            rec["reason"] = (str(e) if own else
                             f"{type(text).__name__} configures no language model: its rotary embedding "
                             "rotates image patches, audio frames or other non-text positions")
        elif str(e).startswith("no single layer list"):
            rec["status"] = "unverified"
            rec["reason"] = f"{e}, so its rotation is not checked against HF's code"
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
CRATE_REFUSES = set()  # tests/hf_families.rs: REFUSED


def write_tables(families, checkpoints):
    """The README's family section (between its markers) and tests/data/hf/FAMILIES.md (every
    model type with its status and reason): tables nobody edits by hand."""
    def crate_refuses(f):
        key = (f.get("text_model_type") or f["model_type"]).removesuffix("_text")
        return f["model_type"] in CRATE_REFUSES or (f.get("rules") is None and key not in SPECIAL)

    def why(f):
        return f.get("rules_missing")

    read = [f for f in families if f["status"] == "read" and not crate_refuses(f)]
    refused = [f for f in families if f["status"] == "read" and crate_refuses(f)]
    unverified = [f for f in families if f["status"] == "unverified"]
    not_text = [f for f in families if f["status"] == "not_text"]
    no_rope = [f for f in families if f["status"] == "no_rope"]
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
        f"- **No RoPE in the model this config builds** ({len(no_rope)}): {names(no_rope)} (the "
        "family's rotary module serves another of its models).",
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
    # `--only a,b`: those model types only, printed and not written (to try an override).
    only = sys.argv[sys.argv.index("--only") + 1].split(",") if "--only" in sys.argv else None
    for mt in only or candidates():
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
        if only:
            print(json.dumps({k: v for k, v in rec.items() if k != "layers"}, indent=1))
    if only:
        return
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
