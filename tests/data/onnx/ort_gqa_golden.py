#!/usr/bin/env python3
"""Golden data from ONNX Runtime's own GroupQueryAttention (`com.microsoft`, CPU provider),
for the fused QKV call's KV-cache write (`Rope::encode_qkv`).

Run (from the repository root, in the venv of ort_rotary_golden.py):

    /tmp/ortenv/bin/python tests/data/onnx/ort_gqa_golden.py > tests/data/onnx/ort_gqa_golden.json

Each case builds a one-node model: GroupQueryAttention with the packed projection as `query`
(`[batch, seq, (num_heads + 2 kv_num_heads) * head_size]`, key and value omitted), a past KV
cache `[batch, kv_num_heads, past, head_size]`, `do_rotary = 1` with float32 `cos_cache` /
`sin_cache` (computed here in float64, rounded), and `seqlens_k = past + seq - 1`. ORT rotates
the new K at positions `past .. past + seq`, appends it and the new V to the past cache and
returns them as `present_key` / `present_value` `[batch, kv_num_heads, past + seq,
head_size]`: what the fused call writes into a BHSD cache at `Positions::Start(past)`.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

MAX_POS = 64


def case(name, b, s, hq, hkv, d, past, interleaved, seed):
    rng = np.random.default_rng(seed)
    qkv = rng.uniform(-1, 1, (b, s, (hq + 2 * hkv) * d)).astype(np.float32)
    past_k = rng.uniform(-1, 1, (b, hkv, past, d)).astype(np.float32)
    past_v = rng.uniform(-1, 1, (b, hkv, past, d)).astype(np.float32)
    inv = 1.0 / (10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d))
    ang = np.arange(MAX_POS, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    f = TensorProto.FLOAT
    node = helper.make_node(
        "GroupQueryAttention",
        ["query", "", "", "past_key", "past_value", "seqlens_k", "total_sequence_length",
         "cos_cache", "sin_cache"],
        ["output", "present_key", "present_value"],
        domain="com.microsoft", num_heads=hq, kv_num_heads=hkv, do_rotary=1,
        rotary_interleaved=int(interleaved))
    graph = helper.make_graph([node], name, [
        helper.make_tensor_value_info("query", f, [b, s, (hq + 2 * hkv) * d]),
        helper.make_tensor_value_info("past_key", f, [b, hkv, past, d]),
        helper.make_tensor_value_info("past_value", f, [b, hkv, past, d]),
        helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [b]),
        helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, []),
        helper.make_tensor_value_info("cos_cache", f, [MAX_POS, d // 2]),
        helper.make_tensor_value_info("sin_cache", f, [MAX_POS, d // 2]),
    ], [helper.make_tensor_value_info(n, f, None)
        for n in ["output", "present_key", "present_value"]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    _, present_k, present_v = sess.run(None, {
        "query": qkv, "past_key": past_k, "past_value": past_v,
        "seqlens_k": np.full((b,), past + s - 1, dtype=np.int32),
        "total_sequence_length": np.array(past + s, dtype=np.int32),
        "cos_cache": cos, "sin_cache": sin})
    return {
        "name": name, "batch": b, "seq": s, "q_heads": hq, "kv_heads": hkv, "head_dim": d,
        "past": past, "interleaved": interleaved,
        "qkv": qkv.astype(np.float64).ravel().tolist(),
        "past_key": past_k.astype(np.float64).ravel().tolist(),
        "past_value": past_v.astype(np.float64).ravel().tolist(),
        "present_key": present_k.astype(np.float64).ravel().tolist(),
        "present_value": present_v.astype(np.float64).ravel().tolist(),
    }


def main():
    cases = [
        case("decode-like, half-split, GQA 4/2", 1, 5, 4, 2, 16, 3, False, 1),
        case("decode step, interleaved, batch 2, GQA 6/2", 2, 1, 6, 2, 32, 7, True, 2),
        case("prefill, no past, GQA 2/1", 1, 9, 2, 1, 64, 0, False, 3),
    ]
    json.dump({"onnxruntime": ort.__version__, "op": "com.microsoft.GroupQueryAttention",
               "cases": cases}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
