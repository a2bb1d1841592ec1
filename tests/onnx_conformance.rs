//! The cos/sin-cache convention against ONNX Runtime's own `RotaryEmbedding` (ONNX opset 23):
//! `tests/data/onnx/ort_rotary_golden.py` ran ORT 1.32 on random input with `cos_cache` /
//! `sin_cache` of `[max_pos, rotary_dim / 2]` and position ids; here the same input, caches and
//! ids go through `CosSinCache::split` out of place on the GPU, into a poisoned output, and
//! must give ORT's output: both pair layouts, partial rotary (the tail passed through), 4-D
//! `[b, h, s, d]` and 3-D `[b, s, h * d]` input.

mod common;

use common::{ctx, f32_buffer, poison, u32_buffer};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, CosSinCache, Dims, Layout, PairLayout, Positions, RopeCall, RopeSpec, TensorView,
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
