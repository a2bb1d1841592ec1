//! Every RoPE family of transformers 5.24 read as transformers reads it.
//!
//! `tests/data/hf/rope_families.py` listed every `model_type` whose modeling module defines a
//! `*RotaryEmbedding`, ran each family's text model (default config) on the meta device with
//! its rotation functions recorded, and replayed each layer kind's call in float64 on a fixed
//! input at positions up to 1M (`rope_families.json`; the configs as `to_dict()` writes them
//! in `rope_families_configs.json`). Here every config is read through `HfRope::from_config`
//! and, layer by layer, must rotate (or not) as HF's code does: in the reference and on the
//! GPU, with HF's output order where it permutes (DeepSeek-V3's interleave).
#![cfg(not(target_arch = "wasm32"))]
#![cfg(feature = "hf-config")]

mod common;

use common::{hf_data, u32s};

use serde_json::Value;
use wgpu_posenc::{
    ArrayView, HfRope, HostPositions, LayerRope, Layout, OutputOrder, Positions, RopeCall,
    TensorView, reference,
};

const REFERENCE_TOL: f64 = 1e-9;
/// Default configs HF runs that the crate refuses, and a word of the error that says why
/// (none today: the list stays for the next such family).
const REFUSED: &[(&str, &str)] = &[];
const GPU_TOL: f64 = 1e-6;

/// The generator's input: row i, lane k.
fn input(n: usize, d: usize) -> Vec<f64> {
    (0..n)
        .flat_map(|i| (0..d).map(move |k| (0.37 * k as f64 + 0.11 * i as f64 + 1.0).sin()))
        .collect()
}

/// One layer kind of one family, with HF's rotation of `input(positions, head_dim)`.
struct Kind {
    what: String,
    rope: LayerRope,
    positions: Vec<u32>,
    /// HF's output, head_dim lanes per position (lanes past the rotated width pass through).
    want: Vec<f64>,
}

/// Reads every family HF rotates; checks the layers; returns each (family, kind) to rotate.
fn kinds() -> Vec<Kind> {
    let doc = hf_data("rope_families.json");
    let configs = hf_data("rope_families_configs.json");
    let outputs = doc["outputs"].as_array().expect("outputs");
    let mut out = Vec::new();
    let mut failures = Vec::new();
    let mut read = 0;
    let mut refused = 0;
    for family in doc["families"].as_array().expect("families") {
        if family["status"] != "read" {
            continue;
        }
        let mt = family["model_type"].as_str().expect("model_type");
        if let Some((_, word)) = REFUSED.iter().find(|(m, _)| *m == mt) {
            match HfRope::from_config(&configs[mt]) {
                Err(e) if e.to_string().contains(word) => refused += 1,
                other => failures.push(format!(
                    "{mt}: expected a refusal naming {word}, got {other:?}"
                )),
            }
            continue;
        }
        // A family whose layers no rule of the table describes (the reason is the script's):
        // refused with that reason unless the crate has code of its own for it.
        if let Some(why) = family["rules_missing"].as_str()
            && let Err(e) = HfRope::from_config(&configs[mt])
        {
            let head = &why[..why.len().min(40)];
            if e.to_string().contains(head) {
                refused += 1;
            } else {
                failures.push(format!("{mt}: refused with {e}, the script found: {why}"));
            }
            continue;
        }
        match check_family(family, &configs[mt], outputs) {
            Ok(k) => {
                read += 1;
                out.extend(k);
            }
            Err(e) => failures.push(format!("{mt}: {e}")),
        }
    }
    // Published config.json files of real checkpoints, each against HF's reading of it.
    let mut files = 0;
    for rec in doc["checkpoints"].as_array().expect("checkpoints") {
        let path = rec["config"].as_str().expect("config");
        assert_eq!(rec["status"], "read", "{path}: HF did not run it");
        match check_family(rec, &hf_data(path), outputs) {
            Ok(k) => {
                files += 1;
                out.extend(k.into_iter().map(|mut k| {
                    k.what = format!("{path}: {}", k.what);
                    k
                }));
            }
            Err(e) => failures.push(format!("{path}: {e}")),
        }
    }
    eprintln!(
        "{read} families read, {refused} refused, {files} checkpoint files, {} layer kinds",
        out.len()
    );
    assert!(
        failures.is_empty(),
        "{} families not read as HF reads them:\n{}",
        failures.len(),
        failures.join("\n")
    );
    out
}

/// One family: its config read, its layers against HF's; its kinds to rotate.
fn check_family(family: &Value, config: &Value, outputs: &[Value]) -> Result<Vec<Kind>, String> {
    let mt = family["model_type"].as_str().expect("model_type");
    let mut out = Vec::new();
    {
        let rope = HfRope::from_config(config).map_err(|e| e.to_string())?;
        let hf_layers = family["layers"].as_array().expect("layers");
        if rope.layers.len() != hf_layers.len() {
            return Err(format!(
                "{} layers, HF {}",
                rope.layers.len(),
                hf_layers.len()
            ));
        }
        let hf_kinds = family["kinds"].as_array().expect("kinds");
        let mut seen = vec![false; hf_kinds.len()];
        for (i, hf) in hf_layers.iter().enumerate() {
            let ours = rope.layer(i);
            let Some(k) = hf.as_u64() else {
                if ours.is_some() {
                    return Err(format!("layer {i} has no RoPE in HF, {ours:?} here"));
                }
                continue;
            };
            let ours = ours.ok_or_else(|| format!("layer {i} rotates in HF, not here"))?;
            let k = k as usize;
            if seen[k] {
                continue;
            }
            seen[k] = true;
            let hk = &hf_kinds[k];
            let width = hk["width"].as_u64().expect("width") as usize;
            let head_dim = hk["head_dim"].as_u64().expect("head_dim");
            if ours.head_dim != head_dim {
                return Err(format!(
                    "layer {i}: head_dim {} here, HF {head_dim}",
                    ours.head_dim
                ));
            }
            // M-RoPE: the axis each pair reads, as HF's module reads it.
            let r = ours.spec.rotary_dim.unwrap_or(ours.head_dim);
            let ours_axes = ours.spec.mrope.map(|m| m.axes(r / 2));
            match (hk["mrope_axis_of_pair"].as_array(), ours_axes) {
                (None, None) => {}
                (Some(hf), Some(Ok(axes))) => {
                    let hf: Vec<u32> = hf
                        .iter()
                        .map(|a| a.as_u64().expect("axis") as u32)
                        .collect();
                    if hf != axes {
                        return Err(format!("layer {i}: M-RoPE axes {axes:?}, HF {hf:?}"));
                    }
                }
                (hf, ours) => {
                    return Err(format!(
                        "layer {i}: M-RoPE here {ours:?}, HF's pairs read axes {hf:?}"
                    ));
                }
            }
            let positions = u32s(&hk["positions"]);
            let rows = outputs[hk["output"].as_u64().expect("output") as usize]
                .as_array()
                .expect("rows");
            let d = head_dim as usize;
            let x = input(positions.len(), d);
            if width > d || rows.len() != positions.len() {
                return Err(format!(
                    "layer {i}: HF rotates {width} lanes of {} rows; the head here is {d} wide, {} positions",
                    rows.len(),
                    positions.len()
                ));
            }
            let mut want = x.clone();
            for (p, row) in rows.iter().enumerate() {
                for (lane, v) in row.as_array().expect("row").iter().enumerate() {
                    want[p * d + lane] = v.as_f64().expect("value");
                }
            }
            if width > d {
                return Err(format!("rotated width {width} > head {d}"));
            }
            out.push(Kind {
                what: format!("{mt} layer {i} ({})", hk["function"].as_str().unwrap_or("")),
                rope: ours.clone(),
                positions,
                want,
            });
        }
    }
    Ok(out)
}

fn positions_of<'a>(kind: &Kind, axes: &'a mut Vec<u32>) -> HostPositions<'a> {
    if kind.rope.spec.mrope.is_some() {
        *axes = [&kind.positions[..]; 3].concat();
        HostPositions::Axes(axes)
    } else {
        *axes = kind.positions.clone();
        HostPositions::Ids(axes)
    }
}

/// `got` (the crate's in-place order) against HF's output, through the family's HF order.
fn worst(kind: &Kind, got: &[f64]) -> f64 {
    let d = kind.rope.head_dim as usize;
    let mut worst = 0.0f64;
    for (i, g) in got.iter().enumerate() {
        let (row, lane) = (i / d, i % d);
        let hf = row * d + kind.rope.hf_lane(lane as u64) as usize;
        let err = (g - kind.want[hf]).abs();
        worst = if err.is_nan() {
            f64::INFINITY
        } else {
            worst.max(err)
        };
    }
    worst
}

/// Every kind rotated by `rotate` (the input, its layout and positions: the crate's in-place
/// output), against HF's within `tol`; all differences reported together.
fn compare_all(
    what: &str,
    tol: f64,
    mut rotate: impl FnMut(&Kind, Vec<f64>, Layout, HostPositions<'_>) -> Vec<f64>,
) {
    let kinds = kinds();
    assert!(kinds.len() >= 150, "{} kinds", kinds.len());
    let mut all = 0.0f64;
    let mut bad = Vec::new();
    for kind in &kinds {
        let n = kind.positions.len() as u64;
        let layout = Layout::bhsd([1, 1, n, kind.rope.head_dim]);
        let x = input(n as usize, kind.rope.head_dim as usize);
        let mut axes = Vec::new();
        let got = rotate(kind, x, layout, positions_of(kind, &mut axes));
        let w = worst(kind, &got);
        if w > tol {
            bad.push(format!("{}: {what} vs HF {w:e}", kind.what));
        }
        all = all.max(w);
    }
    assert!(
        bad.is_empty(),
        "{} kinds differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!("{what} vs HF: max |error| {all:.2e}");
}

#[test]
fn every_family_reads_and_rotates_as_hf_in_the_reference() {
    compare_all(
        "reference",
        REFERENCE_TOL,
        |kind, mut x, layout, positions| {
            reference::rope(&kind.rope.spec, &layout, &mut x, positions);
            x
        },
    );
}

#[test]
fn every_family_rotates_as_hf_on_the_gpu() {
    compare_all("GPU", GPU_TOL, |kind, x, layout, positions| {
        let mut x: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        common::ctx()
            .rope_host(&kind.rope.spec, layout, &mut x, positions)
            .unwrap_or_else(|e| panic!("{}: {e}", kind.what));
        x.iter().map(|&v| f64::from(v)).collect()
    });
}

#[test]
fn hf_order_is_written_as_hf_writes_it() {
    // DeepSeek-V3-style families (`apply_rotary_pos_emb_interleave`): out of place with the
    // family's order, the output is HF's lane for lane, with no permutation in the test.
    let mut checked = 0;
    let mut bad = Vec::new();
    for kind in kinds() {
        if kind.rope.hf_order == OutputOrder::Pairs {
            continue;
        }
        let n = kind.positions.len() as u64;
        let d = kind.rope.head_dim as usize;
        let layout = Layout::bhsd([1, 1, n, kind.rope.head_dim]);
        let spec = kind.rope.spec.clone().output_order(kind.rope.hf_order);
        let x: Vec<f32> = input(n as usize, d).iter().map(|&v| v as f32).collect();
        let poison: Vec<f32> = (0..x.len()).map(common::poison).collect();
        let ids = common::u32_buffer(&kind.positions);
        let out = common::run_on_buffers(&[&x, &poison], |encoder, b| {
            let call = RopeCall::new(
                TensorView::new(&b[0], layout),
                Positions::Ids(ArrayView::new(&ids)),
            )
            .with_output(TensorView::new(&b[1], layout));
            common::ctx()
                .encode_rope_call(encoder, &spec, &call)
                .unwrap_or_else(|e| panic!("{}: {e}", kind.what));
        });
        let w = common::max_error(&out[1], &kind.want);
        if w > GPU_TOL {
            bad.push(format!("{}: GPU in HF's order vs HF {w:e}", kind.what));
        }
        // The reference writes the same order.
        let mut x64 = input(n as usize, d);
        let src = x64.clone();
        reference::rope_out(
            &spec,
            &layout,
            &src,
            &layout,
            &mut x64,
            HostPositions::Ids(&kind.positions),
            None,
        );
        let w = x64
            .iter()
            .zip(&kind.want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if w > REFERENCE_TOL {
            bad.push(format!(
                "{}: reference in HF's order vs HF {w:e}",
                kind.what
            ));
        }
        checked += 1;
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(checked >= 10, "{checked} kinds in HF's interleave order");
    eprintln!("{checked} kinds written in HF's interleave order");
}

#[test]
fn families_not_read_say_why() {
    let refused = |config: &str| -> String {
        let config: serde_json::Value = serde_json::from_str(config).expect("json");
        match HfRope::from_config(&config) {
            Err(e @ wgpu_posenc::Error::Frequency(_)) => e.to_string(),
            other => panic!("{config}: {other:?}"),
        }
    };
    // A vision encoder: its rotary embedding rotates image patches.
    let e = refused(r#"{"model_type": "pixtral"}"#);
    assert!(
        e.contains("transformers 5.24 family") && e.contains("token ids"),
        "{e}"
    );
    // A family whose default config transformers itself cannot run: HF's error is the reason.
    let e = refused(r#"{"model_type": "qwen4_exp"}"#);
    assert!(e.contains("does not run"), "{e}");
    // A rotation the crate's M-RoPE cannot express (four position axes), by name.
    let e = refused(r#"{"model_type": "hunyuan_vl", "text_config": {}}"#);
    assert!(e.contains("4 position axes"), "{e}");
    // A config whose model has no rotary module (Moshi's depth decoder).
    let e = refused(r#"{"model_type": "moshi_depth"}"#);
    assert!(e.contains("has no rotary embedding"), "{e}");
    // Two language-model sub-configs: transformers' get_text_config refuses the file too.
    let e = refused(
        r#"{"model_type": "t5gemma", "decoder": {"model_type": "t5_gemma_module"},
            "text_config": {"model_type": "t5_gemma_module"}}"#,
    );
    assert!(e.contains("text_config, decoder"), "{e}");
    // Not a transformers model type at all.
    let e = refused(r#"{"model_type": "no_such_family"}"#);
    assert!(e.contains("not a transformers 5.24 family"), "{e}");
}

#[test]
fn a_head_dim_for_every_layer_reads_in_one_pass() {
    // EmbeddingGemma 2 with HfRope::MAX_LAYERS layers, each with a head_dim of its own: as
    // many layer types as layers, each layer with its own (the first key naming a layer wins).
    let mut config = hf_data("rope_families_configs.json")["embedding_gemma2"].clone();
    let text = config["text_config"].as_object_mut().expect("text_config");
    let n = HfRope::MAX_LAYERS as usize;
    let dim = |i: usize| 2 * (i % 1000 + 1) as u64;
    let mut per = serde_json::Map::new();
    per.insert("7".into(), serde_json::json!({ "head_dim": 4 }));
    for i in 0..n {
        per.insert(format!("{i:02}"), serde_json::json!({ "head_dim": dim(i) }));
    }
    text.insert("num_hidden_layers".into(), n.into());
    text.insert("layer_types".into(), vec!["sliding_attention"; n].into());
    text.insert("per_layer_config".into(), per.into());
    let rope = HfRope::from_config(&config).expect("read");
    assert_eq!(rope.layers.len(), n);
    assert_eq!(rope.layer_types.len(), 1000);
    for i in [0, 5, 7, 999, 1000, n - 1] {
        assert_eq!(
            rope.layer(i).expect("rotates").head_dim,
            dim(i),
            "layer {i}"
        );
    }
}

#[test]
fn bamba_rotates_the_layers_attn_layer_indices_lists() {
    // Bamba's layers are Mamba layers but those attn_layer_indices lists (as BambaConfig
    // derives layers_block_type); without the list none attends, so none rotates. The list
    // of the published 9B checkpoint, and none.
    let mut config = hf_data("rope_families_configs.json")["bamba"].clone();
    config["attn_layer_indices"] = serde_json::json!([9, 18, 27]);
    let rope = HfRope::from_config(&config).expect("read");
    assert_eq!(rope.layers.len(), 32);
    for i in 0..32 {
        let rotates = rope.layer(i).is_some();
        assert_eq!(rotates, [9, 18, 27].contains(&i), "layer {i}");
    }
    let layer = rope.layer(9).expect("an attention layer");
    assert_eq!(
        layer.spec.rotary_dim,
        Some(layer.head_dim / 2),
        "partial_rotary_factor 0.5"
    );
    config["attn_layer_indices"] = serde_json::Value::Null;
    let rope = HfRope::from_config(&config).expect("read");
    assert!((0..32).all(|i| rope.layer(i).is_none()), "{rope}");
}
