"""Three small random language models built with HF transformers' own classes, and golden
data of a greedy generation with each, for checking a Rust/burn implementation of the same
models token for token and logit for logit.

For each of qwen3/ (Qwen3ForCausalLM), llama3/ (LlamaForCausalLM, Llama 3.x "llama3" RoPE,
tied embeddings) and gemma3/ (Gemma3ForCausalLM, sliding window 32 with one global layer)
beside this file, it writes:

- config.json, generation_config.json and model.safetensors, exactly as
  `save_pretrained(..., safe_serialization=True)` writes them (float32 weights);
- golden.json: a 64-token prompt, the 32 tokens of `generate(do_sample=False,
  max_new_tokens=32)` and, for each step, the 1024 logits that chose the token (`%.17g`),
  the top-1 minus top-2 margin, and the versions used.

Each model is made by its class (its own init under torch.manual_seed), then every weight is
re-drawn with a fixed torch.Generator (see DRAW and redraw below) so that the logits spread
over several units, the norms are not identities, and greedy decoding is well separated and
does not just repeat a token.

The golden run is float64 throughout: the models are loaded back from the saved files into
float64 (the weights are float32 values, so that is exact), and the upcasts to float32
that HF's code makes on purpose (RMSNorm, RoPE inv_freq/cos/sin, eager attention's softmax,
and generate's copy of the logits) are made float64 by a TorchFunctionMode (`Float64`
below) that turns every float32 dtype into float64. The formulas are HF's own; only the
precision changes. The script asserts that:

- a second, cache-free forward pass over prompt + generated tokens gives each step's logits
  within 1e-9 (the cached generation is consistent);
- HF as shipped (`from_pretrained(..., dtype=torch.float64)` without the mode, so with its
  float32 islands) and HF in float32 generate the same 32 tokens; their largest logit
  differences from the float64 golden are recorded in golden.json;
- every greedy margin is above MIN_MARGIN (otherwise it re-draws the weights with the next
  seed; the seed used is recorded);
- the saved files read back: config.json through AutoConfig (RoPE parameters included)
  and model.safetensors holds exactly the float32 weights.

    python3 -m venv /tmp/hfenv && /tmp/hfenv/bin/pip install torch==2.15.0 transformers==5.24.0 safetensors==0.8.0 numpy==2.4.6
    /tmp/hfenv/bin/python integrations/burn/tests/data/models/models.py

(torch 2.15.0 from PyPI is the CUDA build; it runs on the CPU here, and the results do not
depend on it.) Deterministic: fixed seeds and fixed generators, CPU, one thread; running it
twice gives byte-identical files (compare with `sha256sum */*`). On another CPU the float64
logits may differ in their last digits (BLAS kernels); the weights and tokens will not.
"""

import json
import math
import pathlib

import safetensors.torch
import torch
import transformers
from torch.overrides import TorchFunctionMode
from transformers import (
    AutoConfig,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

HERE = pathlib.Path(__file__).parent
PROMPT, NEW = 64, 32
MIN_MARGIN = 1e-2  # greedy well separated, also for a float32 implementation
LOGIT_STD = 3.0  # the lm_head's scale: logits spread over several units
NORM_STD = 0.2  # RMSNorm weights: identity + N(0, NORM_STD)

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)

COMMON = dict(
    vocab_size=1024,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=64,
    max_position_embeddings=4096,
    rms_norm_eps=1e-6,
    attention_bias=False,
    # No special tokens: nothing stops the generation early, and no prompt token is taken
    # for padding.
    bos_token_id=None,
    eos_token_id=None,
    pad_token_id=None,
)

MODELS = {
    "qwen3": (
        Qwen3ForCausalLM,
        lambda: Qwen3Config(
            **COMMON,
            rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
            tie_word_embeddings=False,
        ),
    ),
    "llama3": (
        LlamaForCausalLM,
        lambda: LlamaConfig(
            **COMMON,
            # As Llama 3.2 publishes it.
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 500_000.0,
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            tie_word_embeddings=True,
        ),
    ),
    "gemma3": (
        Gemma3ForCausalLM,
        lambda: Gemma3TextConfig(
            **COMMON,
            # Not head_dim (64), as in Gemma 3 27B (168 over 128): a model that scales scores
            # by head_dim instead fails.
            query_pre_attn_scalar=48,
            sliding_window=32,
            layer_types=["sliding_attention"] * 3 + ["full_attention"],
            rope_parameters={
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0},
                "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
            },
            hidden_activation="gelu_pytorch_tanh",
            tie_word_embeddings=True,
        ),
    ),
}
SEEDS = {"qwen3": 20261210, "llama3": 20261220, "gemma3": 20261230}

# How the weights are drawn (see redraw). A random model with tied embeddings tends to echo
# its input: the logit of the token just read is its embedding's squared norm over the
# residual's scale. So the layers' contributions are made to dominate the residual stream,
# as in trained models: Llama's o_proj/down_proj are scaled up 4x; Gemma, whose
# post-attention/post-feedforward norms fix each contribution's scale, gets those norms
# around a gain of 4 (w ~ 3; Gemma multiplies by 1 + w), a small embedding (x sqrt(256) in
# the model: rms 1), a final norm gain ~3 for the logits' spread, and q_norm/k_norm gain ~2
# so that attention is not flat. With every Gemma norm weight near 0 the model just repeats
# the last prompt token (margin ~20).
DRAW = {
    "qwen3": {"embed_std": 1.0, "out_gain": 1.0, "norm_mean": {"*": 1.0}},
    "llama3": {"embed_std": LOGIT_STD / 16, "out_gain": 4.0, "norm_mean": {"*": 1.0}},
    "gemma3": {
        "embed_std": 1 / 16,
        "out_gain": 1.0,
        "norm_mean": {
            "*": 0.0,  # input_layernorm, pre_feedforward_layernorm
            "q_norm": 1.0,
            "k_norm": 1.0,
            "post_attention_layernorm": 3.0,
            "post_feedforward_layernorm": 3.0,
            "norm": 2.0,
        },
    },
}


class Float64(TorchFunctionMode):
    """Every float32 dtype named in a torch call becomes float64, and Tensor.float becomes
    Tensor.double: HF's deliberate float32 upcasts then run in float64."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.float:
            func = torch.Tensor.double
        f64 = lambda a: torch.float64 if a is torch.float32 else a  # noqa: E731
        return func(*map(f64, args), **{k: f64(v) for k, v in (kwargs or {}).items()})


class F64:
    """A float64 tensor, written with 17 significant digits."""

    def __init__(self, x):
        self.text = "[" + ",".join("%.17g" % v for v in x.flatten().tolist()) + "]"


def dumps(value):
    """json.dumps, with F64 lists written as their text."""
    if isinstance(value, F64):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, float):
        return "%.17g" % value
    return json.dumps(value)


def redraw(model, name, gen):
    """Re-draws every weight (in name order) as float32 values, by DRAW[name]: Linear
    N(0, 1/fan_in) (o_proj/down_proj times out_gain), the embedding N(0, embed_std^2), an
    untied lm_head N(0, (LOGIT_STD/sqrt(hidden))^2), each RMSNorm weight its mean + N(0,
    NORM_STD^2)."""
    draw = DRAW[name]
    with torch.no_grad():
        for pname, p in sorted(model.named_parameters(remove_duplicate=True)):
            x = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if pname.endswith("norm.weight"):
                kind = pname.split(".")[-2]
                x = x * NORM_STD + draw["norm_mean"].get(kind, draw["norm_mean"]["*"])
            elif pname == "model.embed_tokens.weight":
                x = x * draw["embed_std"]
            elif pname == "lm_head.weight":
                x = x * (LOGIT_STD / math.sqrt(p.shape[1]))
            elif pname.endswith("proj.weight"):
                x = x / math.sqrt(p.shape[1])
                if pname.endswith(("o_proj.weight", "down_proj.weight")):
                    x = x * draw["out_gain"]
            else:
                raise ValueError(f"unexpected parameter {pname}")
            p.copy_(x.to(torch.float32))


def generate(model, prompt):
    out = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        do_sample=False,
        max_new_tokens=NEW,
        min_new_tokens=NEW,
        eos_token_id=None,
        pad_token_id=None,
        output_logits=True,
        return_dict_in_generate=True,
    )
    tokens = out.sequences[0, PROMPT:]
    assert tokens.numel() == NEW, tokens.shape
    return tokens, torch.stack(out.logits).squeeze(1)  # [NEW, vocab]


def float64_model(cls, folder):
    """The saved model, loaded back into float64 with its RoPE buffers computed in float64."""
    config = AutoConfig.from_pretrained(folder)
    config._attn_implementation = "eager"
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Float64():
            model = cls(config).eval()
    finally:
        torch.set_default_dtype(old)
    state = safetensors.torch.load_file(folder / "model.safetensors")
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    assert missing == (["lm_head.weight"] if config.tie_word_embeddings else []), missing
    if config.tie_word_embeddings:
        assert model.lm_head.weight is model.model.embed_tokens.weight
    assert all(p.dtype == torch.float64 for p in model.parameters())
    return model


def build(name, seed):
    cls, make_config = MODELS[name]
    folder = HERE / name
    config = make_config()
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = cls(config).eval()  # the class's own init, then re-drawn:
    gen = torch.Generator().manual_seed(seed)
    redraw(model, name, gen)
    model.save_pretrained(folder, safe_serialization=True)
    prompt = torch.randint(0, config.vocab_size, (1, PROMPT), generator=gen)

    # The saved files read back.
    saved = safetensors.torch.load_file(folder / "model.safetensors")
    ours = {k: v for k, v in model.state_dict().items() if k in saved}
    assert set(saved) == set(ours) and all(
        saved[k].dtype == torch.float32 and torch.equal(saved[k], ours[k]) for k in saved
    )
    back = AutoConfig.from_pretrained(folder)
    assert type(back) is type(config) and back.rope_parameters == config.rope_parameters, (
        back.rope_parameters,
        config.rope_parameters,
    )

    with torch.no_grad():
        model64 = float64_model(cls, folder)
        with Float64():
            tokens, logits = generate(model64, prompt)
            # Cache-free forward over prompt + generated tokens.
            full = torch.cat([prompt[0], tokens])[None, :-1]
            again = model64(full, use_cache=False).logits[0, PROMPT - 1 :]
        assert logits.dtype == torch.float64 and again.dtype == torch.float64
        assert torch.equal(logits.argmax(-1), tokens)
        recompute = (again - logits).abs().max().item()
        assert recompute < 1e-9, recompute

        # HF as shipped, in float64 (with its float32 islands) and in float32.
        diffs = {}
        for dtype in (torch.float64, torch.float32):
            hf = cls.from_pretrained(folder, dtype=dtype, attn_implementation="eager").eval()
            hf_tokens, hf_logits = generate(hf, prompt)
            assert torch.equal(hf_tokens, tokens), (dtype, hf_tokens, tokens)
            diffs[str(dtype).removeprefix("torch.")] = (hf_logits.double() - logits).abs().max().item()

    top2 = logits.topk(2, dim=-1).values
    margin = top2[:, 0] - top2[:, 1]
    return config, prompt[0], tokens, logits, margin, recompute, diffs


def main():
    summary = []
    for name in MODELS:
        seed = SEEDS[name]
        while True:
            config, prompt, tokens, logits, margin, recompute, diffs = build(name, seed)
            if margin.min().item() > MIN_MARGIN:
                break
            seed += 1
        golden = {
            "generator": "integrations/burn/tests/data/models/models.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
            "model": MODELS[name][0].__name__,
            "seed": seed,
            "note": (
                "float64 throughout, HF's float32 upcasts (RMSNorm, RoPE, eager softmax, "
                "generate's logits) made float64; eager attention; greedy"
            ),
            "final_logit_softcapping": getattr(config, "final_logit_softcapping", None),
            "attn_logit_softcapping": getattr(config, "attn_logit_softcapping", None),
            "prompt": prompt.tolist(),
            "tokens": tokens.tolist(),
            "logits": [F64(row) for row in logits],
            "margin": F64(margin),
            "min_margin": margin.min().item(),
            "max_abs_logit": logits.abs().max().item(),
            "cache_free_max_abs_diff": recompute,
            "hf_as_shipped_max_abs_diff": diffs,
        }
        (HERE / name / "golden.json").write_text(dumps(golden) + "\n")
        summary.append(
            f"{name}: seed {seed}, min margin {margin.min().item():.6g}, "
            f"max |logit| {logits.abs().max().item():.6g}, cache-free diff {recompute:.3g}, "
            f"HF as shipped diff {diffs}, tokens {tokens.tolist()}"
        )
    print("\n".join(summary))


if __name__ == "__main__":
    main()
