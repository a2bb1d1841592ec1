//! The fused QKV call with QK-norm against HF transformers' own modules: Qwen3's
//! `Qwen3RMSNorm` (`x * w`) and Gemma 3's `Gemma3RMSNorm` (`x * (1 + w)`, both layer types),
//! each followed by the family's rotary module and `apply_rotary_pos_emb`, as the attention's
//! forward runs them (`tests/data/hf/hf_qk_norm_golden.py`, transformers 5.24 in binary64).
//! The spec comes from the fixture's config.json through `HfRope::from_config`; Q goes to its
//! own tensor or back into the packed one (in place), K into a paged cache, both compared
//! with HF's.
#![cfg(not(target_arch = "wasm32"))]
#![cfg(feature = "hf-config")]

mod common;

use common::{ctx, f32_buffer, hf_data, poison, u32_buffer};
use serde_json::Value;
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, HfRope, HostPositions, KvCache, Layout, NormWeight, Positions,
    QkNorm, QkvCall, TensorView, reference,
};

/// A nested JSON array of numbers, flattened.
fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().flat_map(flat).collect(),
        other => vec![other.as_f64().expect("number")],
    }
}

fn read(b: &wgpu::Buffer) -> Vec<f64> {
    let bytes = ctx().read_buffer(b).expect("read back");
    bytemuck::cast_slice::<u8, f32>(&bytes)
        .iter()
        .map(|&v| f64::from(v))
        .collect()
}

#[test]
fn fused_qk_norm_and_rope_match_hf() {
    let golden = hf_data("hf_qk_norm_golden.json");
    for case in golden["cases"].as_array().expect("cases") {
        let name = format!("{} {}", case["config"], case["layer_type"]);
        let rope =
            HfRope::from_config(&hf_data(case["config"].as_str().expect("path"))).expect("config");
        let layer = match case["layer_type"].as_str() {
            Some(t) => rope.layer_type(t).expect("layer type"),
            None => rope.only().expect("one RoPE"),
        };
        let d = case["head_dim"].as_u64().expect("head_dim");
        assert_eq!(layer.head_dim, d, "{name}");
        let (hq, hkv) = (
            case["q_heads"].as_u64().unwrap(),
            case["kv_heads"].as_u64().unwrap(),
        );
        let positions: Vec<u32> = flat(&case["positions"]).iter().map(|&p| p as u32).collect();
        let s = positions.len() as u64;
        let f32s = |v: &Value| flat(v).iter().map(|&x| x as f32).collect::<Vec<f32>>();
        // The norm's kind and eps as read from the config, against HF's module and eps.
        let config_norm = rope.qk_norm.expect("the family normalizes Q and K");
        let hf_weight = match case["weight"].as_str() {
            Some("Scale") => NormWeight::Scale,
            _ => NormWeight::OnePlus,
        };
        assert_eq!(config_norm.weight, hf_weight, "{name}");
        assert_eq!(
            config_norm.eps,
            case["eps"].as_f64().unwrap() as f32,
            "{name}"
        );
        let norm = QkNorm {
            q_weight: f32s(&case["q_weight"]),
            k_weight: f32s(&case["k_weight"]),
            eps: config_norm.eps,
            weight: config_norm.weight,
        };
        // Packed [1, S, hq + 2 hkv, d]: Q heads, K heads, and V (K's values again).
        let (q, k) = (f32s(&case["q"]), f32s(&case["k"]));
        let heads = hq + 2 * hkv;
        let qkv_layout = Layout::bshd(Dims {
            batch: 1,
            heads,
            seq: s,
            head_dim: d,
        });
        let mut packed = vec![0.0f32; (heads * s * d) as usize];
        let head_of = |h: u64, t: u64| -> &[f32] {
            let (src, h) = if h < hq {
                (&q, h)
            } else {
                (&k, (h - hq) % hkv)
            };
            let at = ((h * s + t) * d) as usize;
            &src[at..at + d as usize]
        };
        for t in 0..s {
            for h in 0..heads {
                let at = reference::row_start(&qkv_layout, 0, h, t) as usize;
                packed[at..at + d as usize].copy_from_slice(head_of(h, t));
            }
        }
        // Q out of place, then in place in the packed tensor (each head is read whole before
        // any of it is written); each with both sums.
        for (in_place, subgroups) in [(false, true), (true, true), (false, false), (true, false)] {
            gpu_matches_hf(&GpuCase {
                name: &name,
                spec: &layer.spec,
                norm: &norm,
                packed: &packed,
                qkv_layout,
                dims: [hq, hkv, s, d],
                positions: &positions,
                k_in: &k,
                want_q: &flat(&case["q_out"]),
                want_k: &flat(&case["k_out"]),
                in_place,
                subgroups,
            });
        }
        // The f64 reference against HF.
        let q_layout = Layout::bhsd([1, hq, s, d]);
        let cache_layout = Layout::bshd(Dims {
            batch: 1,
            heads: hkv,
            seq: s,
            head_dim: d,
        });
        let (want_q, want_k) = (flat(&case["q_out"]), flat(&case["k_out"]));
        let mut x: Vec<f64> = packed.iter().map(|&v| f64::from(v)).collect();
        let mut q_ref = vec![0.0; (hq * s * d) as usize];
        let (mut kc, mut vc) = (
            vec![0.0; (hkv * s * d) as usize],
            vec![0.0; (hkv * s * d) as usize],
        );
        let slots_i: Vec<i32> = (0..s as i32).collect();
        reference::qkv_cache(
            &layer.spec,
            &qkv_layout,
            &mut x,
            hkv,
            HostPositions::Ids(&positions),
            Some((&q_layout, &mut q_ref)),
            (&cache_layout, &mut kc),
            (&cache_layout, &mut vc),
            reference::HostCacheIndex::Slots(&slots_i),
            Some(&norm),
        );
        let k_first = heads_first(&kc, &cache_layout, [hkv, s, d]);
        let (er_q, er_k) = (worst(&q_ref, &want_q), worst(&k_first, &want_k));
        eprintln!("{name}: reference vs HF, Q {er_q:.2e}, K {er_k:.2e}");
        assert!(
            er_q < 1e-9 && er_k < 1e-9,
            "{name}: reference Q {er_q:e}, K {er_k:e}"
        );
    }
}

/// The largest difference relative to max(1, |x|); an unwritten (poisoned, NaN) element
/// counts as infinitely wrong.
fn worst(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let e = (g - w).abs() / w.abs().max(1.0);
            if e.is_nan() { f64::INFINITY } else { e }
        })
        .fold(0.0f64, f64::max)
}

/// Rows `[.., h, t, ..]` of `layout` (`[hkv or hq, S, d]` in `dims`) in HF's order
/// `[h, S, d]`.
fn heads_first(x: &[f64], layout: &Layout, [heads, s, d]: [u64; 3]) -> Vec<f64> {
    (0..heads)
        .flat_map(|h| (0..s).map(move |t| (h, t)))
        .flat_map(|(h, t)| {
            let at = reference::row_start(layout, 0, h, t) as usize;
            x[at..at + d as usize].to_vec()
        })
        .collect()
}

/// One GPU run of a golden case: Q out of place or in place.
struct GpuCase<'a> {
    name: &'a str,
    spec: &'a wgpu_posenc::RopeSpec,
    norm: &'a QkNorm,
    packed: &'a [f32],
    qkv_layout: Layout,
    /// `[hq, hkv, S, d]`.
    dims: [u64; 4],
    positions: &'a [u32],
    /// K's input values (V holds them again).
    k_in: &'a [f32],
    want_q: &'a [f64],
    want_k: &'a [f64],
    in_place: bool,
    /// Whether the head's sums may go through subgroups (where the device has them and
    /// they hold a token's invocations: Qwen3's head of 128 on lavapipe), or only through
    /// workgroup memory.
    subgroups: bool,
}

fn gpu_matches_hf(c: &GpuCase<'_>) {
    let [hq, hkv, s, d] = c.dims;
    let name = format!(
        "{} ({}, {})",
        c.name,
        if c.in_place { "Q in place" } else { "Q out" },
        if c.subgroups { "subgroups" } else { "barrier" }
    );
    let qkv = f32_buffer(c.packed);
    let q_layout = Layout::bhsd([1, hq, s, d]);
    // Outputs poisoned: an element left unwritten fails.
    let poisoned = |n: u64| f32_buffer(&(0..n as usize).map(poison).collect::<Vec<f32>>());
    let q_out = poisoned(hq * s * d);
    let cache_layout = Layout::bshd(Dims {
        batch: 1,
        heads: hkv,
        seq: s,
        head_dim: d,
    });
    let (k_cache, v_cache) = (poisoned(hkv * s * d), poisoned(hkv * s * d));
    let slots: Vec<u32> = (0..s as u32).collect();
    let (ids, slot_buffer) = (u32_buffer(c.positions), u32_buffer(&slots));
    let call = QkvCall::new(
        TensorView::new(&qkv, c.qkv_layout),
        hkv,
        Positions::Ids(ArrayView::new(&ids)),
        KvCache {
            k: TensorView::new(&k_cache, cache_layout),
            v: TensorView::new(&v_cache, cache_layout),
            index: CacheIndex::Slots(ArrayView::new(&slot_buffer)),
            overflow_flag: None,
        },
    )
    .with_qk_norm(c.norm);
    let call = if c.in_place {
        call
    } else {
        call.with_q_out(TensorView::new(&q_out, q_layout))
    };
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .clone()
        .with_subgroups(c.subgroups)
        .encode_qkv(&mut encoder, c.spec, &call)
        .expect("encode");
    ctx().queue().submit([encoder.finish()]);

    // HF's q_out [hq, S, d] and k_out [hkv, S, d]; the cache holds K as [S, hkv, d].
    let got_q = if c.in_place {
        let mut q_heads = c.qkv_layout;
        q_heads.shape[1] = hq;
        let all = read(&qkv);
        let got = heads_first(&all, &q_heads, [hq, s, d]);
        // K and V heads of the packed tensor stay as they were.
        for h in hq..hq + 2 * hkv {
            for t in 0..s {
                let at = reference::row_start(&c.qkv_layout, 0, h, t) as usize;
                let (got, was) = (&all[at..at + d as usize], &c.packed[at..at + d as usize]);
                for (e, (g, w)) in got.iter().zip(was).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        f64::from(*w).to_bits(),
                        "{name}: qkv {}",
                        at + e
                    );
                }
            }
        }
        got
    } else {
        read(&q_out)
    };
    let got_k = heads_first(&read(&k_cache), &cache_layout, [hkv, s, d]);
    // V (K's input values again) is copied as it is: neither normalized nor rotated.
    let got_v = heads_first(&read(&v_cache), &cache_layout, [hkv, s, d]);
    assert!(
        got_v
            .iter()
            .zip(c.k_in)
            .all(|(g, &x)| g.to_bits() == f64::from(x).to_bits()),
        "{name}: V cache differs from V"
    );
    let (eq, ek) = (worst(&got_q, c.want_q), worst(&got_k, c.want_k));
    eprintln!("{name}: GPU vs HF, Q {eq:.2e}, K {ek:.2e} (relative to max(1, |x|))");
    assert!(eq < 1e-6 && ek < 1e-6, "{name}: Q {eq:e}, K {ek:e}");
}

#[test]
fn the_qk_norm_of_each_family_is_read_from_its_config() {
    let norm = |path: &str| HfRope::from_config(&hf_data(path)).expect(path).qk_norm;
    let scale = Some(wgpu_posenc::HfQkNorm {
        weight: NormWeight::Scale,
        eps: 1e-6,
    });
    assert_eq!(norm("configs/qwen3-8b.json"), scale);
    assert_eq!(norm("configs/qwen3-vl-8b-instruct.json"), scale);
    assert_eq!(
        norm("configs/gemma-3-1b-it.json").map(|n| n.weight),
        Some(NormWeight::OnePlus)
    );
    for none in [
        "configs/llama-3.1-8b.json",
        "configs/mistral-7b-v0.1.json",
        "configs/gemma4-text-defaults.json",
    ] {
        assert_eq!(norm(none), None, "{none}");
    }
}
