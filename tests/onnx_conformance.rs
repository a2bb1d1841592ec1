//! The cos/sin-cache convention against ONNX Runtime's own `RotaryEmbedding` (ONNX opset 23):
//! `tests/data/onnx/ort_rotary_golden.py` ran ORT 1.32 on random input with `cos_cache` /
//! `sin_cache` of `[max_pos, rotary_dim / 2]` and position ids; here the same input, caches and
//! ids go through `CosSinCache::split` out of place on the GPU, into a poisoned output, and
//! must give ORT's output: both pair layouts, partial rotary (the tail passed through), 4-D
//! `[b, h, s, d]` and 3-D `[b, s, h * d]` input.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{ctx, f32_buffer, poison, u32_buffer};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, CacheIndex, CosSinCache, Dims, KvCache, Layout, PairLayout, Positions, QkvCall,
    RopeCall, RopeSpec, TensorView, reference,
};

/// ORT computes in f32 from the same f32 caches: a few roundings apart.
const TOL: f64 = 1e-6;

fn nums(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

#[test]
fn ort_rotary_embedding_and_the_crate_agree() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/onnx/ort_rotary_golden.json"
    ))
    .expect("golden");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 6);
    let mut worst = 0.0f64;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let shape: Vec<u64> = nums(&case["shape"]).iter().map(|&v| v as u64).collect();
        let [b, h, s, d] = [shape[0], shape[1], shape[2], shape[3]];
        let r = case["rotary_dim"].as_u64().expect("r");
        let max_pos = case["max_pos"].as_u64().expect("max_pos");
        let interleaved = case["interleaved"].as_bool().expect("interleaved");
        // The golden tensors are in [b, h, s, d] order; the 3-D cases run on BSHD memory.
        let layout = if case["three_d"].as_bool().expect("three_d") {
            Layout::bshd(Dims {
                batch: b,
                heads: h,
                seq: s,
                head_dim: d,
            })
        } else {
            Layout::bhsd([b, h, s, d])
        };
        let logical = Layout::bhsd([b, h, s, d]);
        let to_memory = |values: &[f64]| {
            let mut out = vec![0f32; layout.end().expect("valid") as usize];
            for bb in 0..b {
                for hh in 0..h {
                    for ss in 0..s {
                        let from = wgpu_posenc::reference::row_start(&logical, bb, hh, ss);
                        let to = wgpu_posenc::reference::row_start(&layout, bb, hh, ss);
                        for k in 0..d {
                            out[(to + k) as usize] = values[(from + k) as usize] as f32;
                        }
                    }
                }
            }
            out
        };
        let x = to_memory(&nums(&case["x"]));
        let want = to_memory(&nums(&case["y"]));
        let cos: Vec<f32> = nums(&case["cos"]).iter().map(|&v| v as f32).collect();
        let sin: Vec<f32> = nums(&case["sin"]).iter().map(|&v| v as f32).collect();
        let ids: Vec<u32> = nums(&case["ids"]).iter().map(|&v| v as u32).collect();
        let mut spec = RopeSpec::new().pair_layout(if interleaved {
            PairLayout::Interleaved
        } else {
            PairLayout::HalfSplit
        });
        if r < d {
            spec = spec.rotary_dim(r);
        }
        let guard = 13;
        let initial_out: Vec<f32> = (0..x.len() + guard).map(poison).collect();
        let (cos_buf, sin_buf, id_buf, x_buf) = (
            f32_buffer(&cos),
            f32_buffer(&sin),
            u32_buffer(&ids),
            f32_buffer(&x),
        );
        let flag = u32_buffer(&[0; 4]);
        let out = common::run_on_buffer(&initial_out, |encoder, out_buf| {
            let cache = CosSinCache::split(&cos_buf, &sin_buf, max_pos, r)
                .with_overflow_flag(ArrayView::new(&flag));
            let call = RopeCall::new(
                TensorView::new(&x_buf, layout),
                Positions::Ids(ArrayView::new(&id_buf)),
            )
            .with_output(TensorView::new(out_buf, layout))
            .with_cache(cache);
            ctx()
                .encode_rope_call(encoder, &spec, &call)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        });
        for (i, (&g, &w)) in out.iter().zip(&want).enumerate() {
            let err = (f64::from(g) - f64::from(w)).abs();
            worst = worst.max(err);
            assert!(err <= TOL, "{name}: element {i}: {g} vs ORT {w}");
        }
        for (i, (&g, &p)) in out.iter().zip(&initial_out).enumerate().skip(x.len()) {
            assert_eq!(
                g.to_bits(),
                p.to_bits(),
                "{name}: guard element {i} written"
            );
        }
    }
    eprintln!("ORT RotaryEmbedding vs the crate: max |error| {worst:.2e}");
}

/// The fused QKV call's cache write against ONNX Runtime's `GroupQueryAttention`
/// (`tests/data/onnx/ort_gqa_golden.py`): the packed projection and a past cache in, ORT's
/// `present_key` (the past, then the new K rotated at positions past..) and `present_value`
/// out. Here the packed projection goes through `QkvCall` into a BHSD cache of `past + seq`
/// positions holding the past and poison after it, at `Positions::Start(past)`: the cache
/// must become ORT's present, the past untouched.
#[test]
fn ort_group_query_attention_cache_and_the_fused_call_agree() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/onnx/ort_gqa_golden.json"
    ))
    .expect("golden");
    let doc: Value = serde_json::from_str(&text).expect("json");
    let cases = doc["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 3);
    let mut worst = 0.0f64;
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let dim = |k: &str| case[k].as_u64().expect(k);
        let (b, s, hq, hkv, d, past) = (
            dim("batch"),
            dim("seq"),
            dim("q_heads"),
            dim("kv_heads"),
            dim("head_dim"),
            dim("past"),
        );
        let qkv: Vec<f32> = nums(&case["qkv"]).iter().map(|&v| v as f32).collect();
        let qkv_layout = Layout::bshd(Dims {
            batch: b,
            heads: hq + 2 * hkv,
            seq: s,
            head_dim: d,
        });
        let total = past + s;
        let cache_layout = Layout::bhsd([b, hkv, total, d]);
        // The past rows in place, poison in the rows the call writes.
        let cache = |past_values: &Value| -> Vec<f32> {
            let past_values = nums(past_values);
            let mut c: Vec<f32> = (0..(b * hkv * total * d) as usize).map(poison).collect();
            for (i, &v) in past_values.iter().enumerate() {
                let (row, e) = (i as u64 / d, i as u64 % d);
                let (bh, p) = (row / past.max(1), row % past.max(1));
                let at = reference::row_start(&cache_layout, bh / hkv, bh % hkv, p) + e;
                c[at as usize] = v as f32;
            }
            c
        };
        let (k_in, v_in) = (cache(&case["past_key"]), cache(&case["past_value"]));
        let (qkv_buffer, k_buffer, v_buffer) =
            (f32_buffer(&qkv), f32_buffer(&k_in), f32_buffer(&v_in));
        let spec = RopeSpec::new().pair_layout(if case["interleaved"].as_bool().expect("bool") {
            PairLayout::Interleaved
        } else {
            PairLayout::HalfSplit
        });
        let call = QkvCall::new(
            TensorView::new(&qkv_buffer, qkv_layout),
            hkv,
            Positions::Start(past as u32),
            KvCache {
                k: TensorView::new(&k_buffer, cache_layout),
                v: TensorView::new(&v_buffer, cache_layout),
                index: CacheIndex::Position,
                overflow_flag: None,
            },
        );
        let mut encoder = ctx().device().create_command_encoder(&Default::default());
        ctx()
            .encode_qkv(&mut encoder, &spec, &call)
            .expect("encode");
        ctx().queue().submit([encoder.finish()]);
        for (what, buffer, initial, present) in [
            ("present_key", &k_buffer, &k_in, nums(&case["present_key"])),
            (
                "present_value",
                &v_buffer,
                &v_in,
                nums(&case["present_value"]),
            ),
        ] {
            let bytes = ctx().read_buffer(buffer).expect("read");
            let got: &[f32] = bytemuck::cast_slice(&bytes);
            // ORT's present is [b, hkv, past + seq, d] row-major: the cache's own layout.
            assert_eq!(present.len(), got.len(), "{name}");
            for (i, ((&g, &x), &want)) in got.iter().zip(initial).zip(&present).enumerate() {
                let p = (i as u64 / d) % total;
                if p < past {
                    assert_eq!(
                        g.to_bits(),
                        x.to_bits(),
                        "{name}: {what} {i}, past row written"
                    );
                } else {
                    let err = (f64::from(g) - want).abs();
                    assert!(err <= TOL, "{name}: {what} {i}: {g} vs ORT's {want}");
                    worst = worst.max(err);
                }
            }
        }
    }
    eprintln!("fused QKV vs ORT GroupQueryAttention present K/V: max |error| {worst:.2e}");
}
