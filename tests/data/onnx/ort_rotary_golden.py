#!/usr/bin/env python3
"""Golden data from ONNX Runtime's own RotaryEmbedding (ONNX opset 23, `ai.onnx`), for the
crate's cos/sin-cache convention (`CosSinCache::split`, the ONNX `cos_cache` / `sin_cache`
form: `[max_pos, rotary_dim / 2]` each).

Run (from the repository root):

    python3 -m venv /tmp/ortenv && /tmp/ortenv/bin/pip install onnx onnxruntime numpy
    /tmp/ortenv/bin/python tests/data/onnx/ort_rotary_golden.py > tests/data/onnx/ort_rotary_golden.json

Each case builds a one-node model, runs it on ONNX Runtime's CPU provider with random float32
input (seeded), float32 caches of cos and sin at positions 0..max_pos, and random position ids,
and records the inputs and ORT's output. The cache values are computed here in float64 and
rounded to float32; what is tested is how ORT applies them (which elements pair up, the
partial rotary width, the position ids), which the crate must do the same way.
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

MAX_POS = 64


def case(name, shape, interleaved, rotary_dim, three_d, seed):
    b, h, s, d = shape
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(b, h, s, d)).astype(np.float32)
    r = rotary_dim or d
    inv = 1.0 / (10000.0 ** (np.arange(0, r, 2, dtype=np.float64) / r))
    ang = np.arange(MAX_POS, dtype=np.float64)[:, None] * inv[None, :]
    cos = np.cos(ang).astype(np.float32)
    sin = np.sin(ang).astype(np.float32)
    ids = rng.integers(0, MAX_POS, size=(b, s)).astype(np.int64)
    attrs = {"interleaved": int(interleaved)}
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    if three_d:
        # [batch, seq, heads * head_dim] (BSHD in memory) with num_heads.
        feed_x = x.transpose(0, 2, 1, 3).reshape(b, s, h * d)
        attrs["num_heads"] = h
        x_shape = [b, s, h * d]
    else:
        feed_x = x
        x_shape = [b, h, s, d]
    node = helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "ids"], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape),
         helper.make_tensor_value_info("cos", TensorProto.FLOAT, [MAX_POS, r // 2]),
         helper.make_tensor_value_info("sin", TensorProto.FLOAT, [MAX_POS, r // 2]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [b, s])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, x_shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"X": feed_x, "cos": cos, "sin": sin, "ids": ids})
    if three_d:
        y = y.reshape(b, s, h, d).transpose(0, 2, 1, 3)
    return {
        "name": name, "shape": list(shape), "interleaved": interleaved,
        "rotary_dim": r, "three_d": three_d, "max_pos": MAX_POS,
        "x": x.astype(np.float64).ravel().tolist(),
        "cos": cos.astype(np.float64).ravel().tolist(),
        "sin": sin.astype(np.float64).ravel().tolist(),
        "ids": ids.ravel().tolist(),
        "y": y.astype(np.float64).ravel().tolist(),
    }


def main():
    cases = [
        case("half-split, 4-D", (2, 3, 7, 16), False, None, False, 1),
        case("interleaved, 4-D", (2, 3, 7, 16), True, None, False, 2),
        case("half-split, partial rotary 8 of 16", (1, 2, 9, 16), False, 8, False, 3),
        case("interleaved, partial rotary 8 of 16", (1, 2, 9, 16), True, 8, False, 4),
        case("half-split, 3-D [b, s, h*d]", (2, 4, 5, 32), False, None, True, 5),
        case("interleaved, 3-D [b, s, h*d]", (2, 4, 5, 32), True, None, True, 6),
    ]
    json.dump({"onnxruntime": ort.__version__, "onnx": onnx.__version__, "opset": 23,
               "generator": "tests/data/onnx/ort_rotary_golden.py", "cases": cases},
              sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
