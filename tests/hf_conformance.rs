//! `RopeSpec::from_hf_config` / `HfRope::from_config` against HF transformers' own code.
//!
//! `tests/data/hf/hf_rope_golden.py` fed each config.json under `tests/data/hf/configs/` to
//! transformers 5.24, built the family's own rotary embedding module and applied the
//! family's own apply-rotary function to a fixed input at positions up to 1M; the outputs
//! are in `hf_rope_golden.json`. Here each fixture is read as a user would (no overrides),
//! and the rotation of the same input, by the reference and by the GPU, must match HF's.
#![cfg(not(target_arch = "wasm32"))]
#![cfg(feature = "hf-config")]

mod common;

use common::{hf_data, u32s};

use serde_json::Value;
use wgpu_posenc::{HfRope, HostPositions, Layout, RopeSpec, reference};

/// HF's rotations (float64) against the reference's.
const REFERENCE_TOL: f64 = 1e-9;
/// Against the GPU's (f32 storage and arithmetic).
const GPU_TOL: f64 = 1e-6;

fn rows(v: &Value) -> Vec<Vec<f64>> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|x| x.as_f64().expect("number"))
                .collect()
        })
        .collect()
}

/// One golden case: the spec for its layer type, its positions (flat, or three axes), the
/// input and HF's output.
struct Case {
    what: String,
    spec: RopeSpec,
    head_dim: u64,
    positions: Vec<u32>,
    mrope: bool,
    input: Vec<Vec<f64>>,
    output: Vec<Vec<f64>>,
}

fn cases() -> Vec<Case> {
    let golden = hf_data("hf_rope_golden.json");
    let mut out = Vec::new();
    for model in golden["models"].as_array().expect("models") {
        let name = model["name"].as_str().expect("name");
        let config = hf_data(model["config"].as_str().expect("config"));
        let rope = HfRope::from_config(&config).unwrap_or_else(|e| panic!("{name}: {e}"));
        for case in model["cases"].as_array().expect("cases") {
            let label = case["label"].as_str().unwrap_or("");
            let what = format!("{name} {label}");
            let layer = match case["layer_type"].as_str() {
                Some(t) => rope.layer_type(t),
                None => rope.layer_types.iter().find_map(|(_, r)| r.as_ref()),
            }
            .unwrap_or_else(|| panic!("{what}: no RoPE for the case's layer type"));
            let positions = &case["positions"];
            let mrope = positions[0].is_array();
            let positions = if mrope {
                positions
                    .as_array()
                    .expect("axes")
                    .iter()
                    .flat_map(u32s)
                    .collect()
            } else {
                u32s(positions)
            };
            out.push(Case {
                what,
                spec: layer.spec.clone(),
                head_dim: layer.head_dim,
                positions,
                mrope,
                input: rows(&case["input"]),
                output: rows(&case["output"]),
            });
        }
    }
    out
}

fn host_positions(case: &Case) -> HostPositions<'_> {
    if case.mrope {
        HostPositions::Axes(&case.positions)
    } else {
        HostPositions::Ids(&case.positions)
    }
}

#[test]
fn every_fixture_reads_as_hf_reads_it() {
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    let mut worst = 0.0f64;
    for case in &cases {
        let n = case.input.len() as u64;
        assert_eq!(
            case.input[0].len() as u64,
            case.head_dim,
            "{}: head_dim",
            case.what
        );
        let layout = Layout::bhsd([1, 1, n, case.head_dim]);
        let mut x: Vec<f64> = case.input.iter().flatten().copied().collect();
        reference::rope(&case.spec, &layout, &mut x, host_positions(case));
        for (i, (got, want)) in x.iter().zip(case.output.iter().flatten()).enumerate() {
            let err = (got - want).abs();
            worst = worst.max(err);
            assert!(
                err <= REFERENCE_TOL,
                "{}: element {i} (position {}): {got} vs HF {want}",
                case.what,
                case.positions[i / case.head_dim as usize % n as usize]
            );
        }
    }
    eprintln!(
        "{} cases, reference vs HF max |error| {worst:.2e}",
        cases.len()
    );
}

#[test]
fn gpu_rotations_match_hf() {
    let ctx = common::ctx();
    let mut worst = 0.0f64;
    for case in cases() {
        let n = case.input.len() as u64;
        let layout = Layout::bhsd([1, 1, n, case.head_dim]);
        let mut x: Vec<f32> = case.input.iter().flatten().map(|&v| v as f32).collect();
        ctx.rope_host(&case.spec, layout, &mut x, host_positions(&case))
            .unwrap_or_else(|e| panic!("{}: {e}", case.what));
        for (i, (&got, want)) in x.iter().zip(case.output.iter().flatten()).enumerate() {
            let err = (f64::from(got) - want).abs();
            worst = worst.max(err);
            assert!(
                err <= GPU_TOL,
                "{}: element {i}: {got} vs HF {want}",
                case.what
            );
        }
    }
    eprintln!("GPU vs HF max |error| {worst:.2e}");
}

#[test]
fn per_layer_models_give_each_layer_its_spec() {
    // Gemma 3 1B: local layers base 10000, every 6th layer global with base 1e6.
    let gemma = HfRope::from_config(&hf_data("configs/gemma-3-1b-it.json")).expect("gemma");
    assert_eq!(gemma.layers.len(), 26);
    for i in 0..26 {
        let base = gemma
            .layer(i)
            .expect("every Gemma layer has RoPE")
            .spec
            .base;
        let want = if (i + 1) % 6 == 0 { 1e6 } else { 1e4 };
        assert_eq!(base, want, "layer {i}");
    }
    let err = RopeSpec::from_hf_config(&hf_data("configs/gemma-3-1b-it.json"), 256).unwrap_err();
    assert!(
        matches!(err, wgpu_posenc::Error::PerLayerRope { .. }),
        "{err}"
    );
    // Llama 4 Scout: NoPE on every 4th layer, the others interleaved with llama3 scaling.
    let scout =
        HfRope::from_config(&hf_data("configs/llama-4-scout-17b-16e.json")).expect("llama4");
    assert_eq!(scout.layers.len(), 48);
    for i in 0..48 {
        assert_eq!(scout.layer(i).is_none(), (i + 1) % 4 == 0, "layer {i}");
    }
    // gpt-oss: sliding and full layers rotate alike, so one spec serves.
    let oss = RopeSpec::from_hf_config(&hf_data("configs/gpt-oss-20b.json"), 64).expect("gpt-oss");
    assert_eq!(oss.base, 150_000.0);
}

#[test]
fn head_dim_comes_from_the_config() {
    // Pythia-410m: head 64, rotary_pct 0.25: 16 lanes rotate; base from rotary_emb_base.
    let pythia = hf_data("configs/pythia-410m.json");
    let spec = RopeSpec::from_hf_config(&pythia, 64).expect("pythia");
    assert_eq!(spec.rotary_dim, Some(16));
    let err = RopeSpec::from_hf_config(&pythia, 128).unwrap_err();
    assert!(
        matches!(
            err,
            wgpu_posenc::Error::HeadDimMismatch {
                config: 64,
                given: 128,
                ..
            }
        ),
        "{err}"
    );
    // DeepSeek-V2-Lite rotates the 64 q_pe lanes, interleaved.
    let ds = RopeSpec::from_hf_config(&hf_data("configs/deepseek-v2-lite.json"), 64).expect("ds");
    assert_eq!(ds.pair_layout, wgpu_posenc::PairLayout::Interleaved);
    assert!(RopeSpec::from_hf_config(&hf_data("configs/deepseek-v2-lite.json"), 192).is_err());
}

#[test]
fn unknown_families_and_configs_hf_refuses_are_errors() {
    let json = |s: &str| serde_json::from_str::<Value>(s).expect("json");
    for (config, what) in [
        (
            r#"{"model_type": "some_new_model", "rope_theta": 1e4}"#,
            "unknown family",
        ),
        (r#"{"rope_theta": 1e4}"#, "no model_type"),
        (
            r#"{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 1,
                "max_position_embeddings": 64,
                "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 32}}"#,
            "YaRN without a factor key (HF: KeyError)",
        ),
        (
            r#"{"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 1,
                "max_position_embeddings": 128,
                "rope_scaling": {"type": "su", "short_factor": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],
                                 "long_factor": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}}"#,
            "legacy su without its original length",
        ),
        (
            r#"{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 1,
                "partial_rotary_factor": 0.5, "rope_scaling": {"rope_type": "linear", "factor": 2}}"#,
            "partial rotary with a scaled type in a llama family",
        ),
    ] {
        let e = HfRope::from_config(&json(config));
        assert!(e.is_err(), "{what}: {e:?}");
    }
}

#[test]
fn a_cos_sin_cache_built_by_hf_is_used_as_given() {
    // HF's rotary modules return cos and sin with the attention factor in them (Qwen2.5 YaRN
    // x1.1386, Phi-3 LongRoPE x1.1902): a cache of them replaces the spec's angles, factor
    // included, so the rotation is HF's.
    let doc = hf_data("hf_cos_sin_cache.json");
    let ctx = common::ctx();
    for case in doc["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("name");
        let r = case["rotary_dim"].as_u64().expect("r");
        let max_pos = case["max_pos"].as_u64().expect("max_pos");
        let flat = |k: &str| -> Vec<f32> {
            rows(&case[k])
                .into_iter()
                .flatten()
                .map(|v| v as f32)
                .collect()
        };
        let (cos, sin) = (flat("cos"), flat("sin"));
        let ids = u32s(&case["ids"]);
        let input = flat("input");
        let output: Vec<f64> = rows(&case["output"]).into_iter().flatten().collect();
        let spec = RopeSpec::from_hf_config(&hf_data(case["config"].as_str().expect("config")), r)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let layout = Layout::bhsd([1, 1, ids.len() as u64, r]);
        let (cos_buf, sin_buf, id_buf) = (
            common::f32_buffer(&cos),
            common::f32_buffer(&sin),
            common::u32_buffer(&ids),
        );
        let flag = common::u32_buffer(&[0; 4]);
        let out = common::run_on_buffer(&input, |encoder, buffer| {
            let cache = wgpu_posenc::CosSinCache::split(&cos_buf, &sin_buf, max_pos, r)
                .with_overflow_flag(wgpu_posenc::ArrayView::new(&flag));
            let call = wgpu_posenc::RopeCall::new(
                wgpu_posenc::TensorView::new(buffer, layout),
                wgpu_posenc::Positions::Ids(wgpu_posenc::ArrayView::new(&id_buf)),
            )
            .with_cache(cache);
            ctx.encode_rope_call(encoder, &spec, &call)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        });
        // A NaN counts as infinitely wrong (f64::max would skip it).
        let worst = common::max_error(&out, &output);
        eprintln!("{name}: HF cache, max |error| {worst:.2e}");
        assert!(worst <= GPU_TOL, "{name}: {worst:e}");
    }
}
