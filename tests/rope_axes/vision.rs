//! transformers' vision towers read from the model's `config.json`
//! (`RotaryModule::from_hf_vision_config`) against the rotary modules transformers 5.24 builds
//! from it and the attention's own apply function (`tests/data/hf/vision_rope.py`), and the
//! matrix of every family whose encoder rotates (`tests/data/hf/VISION.md`, written with
//! `POSENC_WRITE_MATRIX=1`).

use serde_json::Value;
use wgpu_posenc::{
    Dims, Error, FrequencyError, HF_VISION_ROPE_NOT_READ, Layout, Positions, RotaryModule,
    reference,
};

use super::common::test_data;
use super::{list, rotate_with, u};

/// Every family of the survey: read (and rotating as transformers does at the recorded
/// tokens), or refused by name with the reason; the matrix written or checked.
#[test]
fn vision_towers_read_from_their_configs() {
    let data = test_data("hf/vision_rope.json");
    let families = data["families"].as_array().expect("families");
    let cases = data["cases"].as_array().expect("cases");
    let mut rows = Vec::new();
    let (mut read, mut partly, mut refused) = (0, 0, 0);
    for family in families {
        let mt = family["model_type"].as_str().expect("model_type");
        let modules: Vec<String> = family["modules"]
            .as_array()
            .expect("modules")
            .iter()
            .map(|m| format!("`{}`", m["class"].as_str().unwrap_or("")))
            .collect();
        let got = RotaryModule::from_hf_vision_config(&family["config"]);
        match got {
            Ok(read_modules) => {
                read += 1;
                assert_eq!(read_modules.len(), 1, "{mt}");
                let rope = &read_modules[0];
                let case = cases
                    .iter()
                    .find(|c| c["model_type"] == mt)
                    .unwrap_or_else(|| panic!("{mt}: read, but no golden case"));
                assert_eq!(case["module"].as_str(), Some(rope.module), "{mt}");
                // Numbers recorded once for the towers that compute the same ones.
                let case = match case["same_as"].as_str() {
                    Some(other) => cases
                        .iter()
                        .find(|c| c["model_type"] == other && c.get("same_as").is_none())
                        .unwrap_or_else(|| panic!("{mt}: same as {other}, not recorded")),
                    None => case,
                };
                let paths: Vec<&str> = family["modules"]
                    .as_array()
                    .expect("modules")
                    .iter()
                    .filter_map(|m| m["path"].as_str())
                    .collect();
                assert!(
                    paths.contains(&rope.path),
                    "{mt}: {} not in {paths:?}",
                    rope.path
                );
                check_case(mt, rope, case);
                // A family whose other encoder (audio) rotates too is read only in part.
                let others: Vec<&str> = family["modules"]
                    .as_array()
                    .expect("modules")
                    .iter()
                    .filter_map(|m| m["class"].as_str())
                    .filter(|&c| c != rope.module)
                    .collect();
                let status = if others.is_empty() {
                    "read"
                } else {
                    read -= 1;
                    partly += 1;
                    "vision read"
                };
                let reason = match others.is_empty() {
                    true => String::new(),
                    false => format!("not read: {}", others.join(", ")),
                };
                rows.push(format!(
                    "| `{mt}` | {} | {status} | {} | {reason} |",
                    modules.join(", "),
                    describe(rope)
                ));
            }
            Err(Error::Frequency(FrequencyError::FamilyNotRead { reason, .. })) => {
                refused += 1;
                let listed = HF_VISION_ROPE_NOT_READ.iter().any(|r| r.0 == mt);
                assert!(listed, "{mt}: refused, not listed");
                let reason = reason.replace('|', "/");
                rows.push(format!(
                    "| `{mt}` | {} | refused | | {reason} |",
                    modules.join(", ")
                ));
            }
            Err(e) => panic!("{mt}: {e}"),
        }
    }
    for (mt, ..) in HF_VISION_ROPE_NOT_READ {
        assert!(
            families.iter().any(|f| f["model_type"] == mt),
            "{mt} listed as refused, not in the survey"
        );
    }
    eprintln!("{read} encoders read, {partly} in part, {refused} refused");
    check_matrix(&rows, [read, partly, refused]);
}

/// The module's rotation of the recorded tokens (its cos and sin applied by the attention's
/// own function, in f32) against the f64 reference, within what f32 angles of those positions
/// allow; the GPU against the reference.
fn check_case(mt: &str, rope: &RotaryModule, case: &Value) {
    let names: Vec<&str> = case["position_row_names"]
        .as_array()
        .expect("row names")
        .iter()
        .map(|v| v.as_str().expect("name"))
        .collect();
    let rows: Vec<Vec<f64>> = case["position_rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(list)
        .collect();
    let n = rows[0].len();
    let mut axes = vec![0u32; 3 * n];
    for (name, row) in names.iter().zip(&rows) {
        let plane = match *name {
            "t" => 0,
            "h" => 1,
            "w" => 2,
            other => panic!("{mt}: position row {other}"),
        };
        for (k, &p) in row.iter().enumerate() {
            axes[plane * n + k] = p as u32;
        }
    }
    let (heads, d) = (u(&case["heads"]), u(&case["head_dim"]));
    assert_eq!(d, rope.head_dim, "{mt}: head_dim");
    let flat = |v: &Value| -> Vec<f64> {
        v.as_array()
            .expect("tokens")
            .iter()
            .flat_map(|t| t.as_array().expect("heads").iter().flat_map(list))
            .collect()
    };
    let (q, theirs) = (flat(&case["q"]), flat(&case["out"]));
    let shape = Dims {
        batch: 1,
        seq: n as u64,
        heads,
        head_dim: d,
    };
    assert_eq!(
        q.len() as u64,
        shape.batch * shape.seq * heads * d,
        "{mt}: q"
    );
    let mut want = q.clone();
    reference::rope(
        &rope.spec,
        &Layout::bshd(shape),
        &mut want,
        Positions::Axes(&axes[..]),
    );
    let far = axes.iter().fold(1u32, |m, &p| m.max(p)) as f64;
    let big = q.iter().fold(1.0f64, |m, &v| m.max(v.abs()));
    // f32 frequencies times f32 positions, f32 cos and sin and products: a few units in the
    // last place of the angle, times the values.
    let allowed = 4.0 * big * (1.0 + far) * 2f64.powi(-23) + 1e-6;
    let e_module = max_diff(&theirs, &want);
    assert!(
        e_module <= allowed,
        "{mt}: {e_module:e} from transformers (allowed {allowed:e})"
    );
    let q32: Vec<f32> = q.iter().map(|&v| v as f32).collect();
    let got = rotate_with(&rope.spec, shape, &q32, &axes, |v| Positions::Axes(v));
    let got: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
    let e_gpu = max_diff(&got, &want);
    assert!(
        e_gpu <= 4e-7 * big,
        "{mt}: GPU {e_gpu:e} from the reference"
    );
    eprintln!(
        "{mt} ({}): reference within {e_module:.1e} of transformers at {n} tokens (positions \
         to {far}), GPU {e_gpu:.1e} of the reference",
        rope.module
    );
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// What a read tower rotates: axes (pairs each) and their order, frequencies, base, pair
/// layout, rotated lanes.
fn describe(r: &RotaryModule) -> String {
    let m = r.spec.mrope.expect("axes");
    let rotated = r.spec.rotary_dim.unwrap_or(r.head_dim);
    format!(
        "head {}, {rotated} lanes rotated; t/h/w pairs {:?}, {:?} order, {:?} frequencies, base \
         {}, {:?} pairs",
        r.head_dim, m.section, m.order, m.frequencies, r.spec.base, r.spec.pair_layout
    )
}

/// Writes (with `POSENC_WRITE_MATRIX=1`) or checks `tests/data/hf/VISION.md`.
fn check_matrix(rows: &[String], [read, partly, refused]: [usize; 3]) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hf/VISION.md");
    let total = read + partly + refused;
    let text = format!(
        "# transformers vision, video and audio encoders that rotate\n\nGenerated by \
         `tests/rope_axes/vision.rs` (`POSENC_WRITE_MATRIX=1 cargo test --features hf-config \
         --test rope_axes vision`) from `tests/data/hf/vision_rope.json` (`vision_rope.py`: \
         every transformers 5.24 model type built on the meta device, the rotary modules of its \
         encoders listed, the axial ones run on the CPU and applied by the attention's own \
         function) and `RotaryModule::from_hf_vision_config`; do not edit. `read`: the \
         encoder's rotation read from the model's `config.json` and matching transformers at \
         the recorded tokens; `vision read`: the vision tower read, another encoder's module \
         not; `refused`: a typed error that names the module and says why.\n\n\
         **{read} of {total} read ({:.0} %), {partly} read in part (the vision tower, not \
         the audio encoder), {refused} refused.**\n\n\
         | model type | modules | status | what the crate rotates | reason |\n|---|---|---|---|---|\n{}\n",
        100.0 * read as f64 / total.max(1) as f64,
        rows.join("\n")
    );
    if std::env::var_os("POSENC_WRITE_MATRIX").is_some() {
        std::fs::write(path, text).expect("write VISION.md");
        return;
    }
    let on_disk = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        on_disk == text,
        "tests/data/hf/VISION.md is stale: rerun with POSENC_WRITE_MATRIX=1"
    );
}

/// Bad vision configs are typed errors that name the key; a family not read names its
/// module; a model without a known rotating tower says which are read; Pixtral's tower is
/// found inside another model (LLaVA's) by its own `model_type`.
#[test]
fn vision_configs_with_bad_keys_are_typed_errors() {
    use serde_json::json;
    let qwen = |vision: Value| json!({"model_type": "qwen2_vl", "vision_config": vision});
    let ok =
        RotaryModule::from_hf_vision_config(&qwen(json!({"embed_dim": 1280, "num_heads": 16})))
            .expect("Qwen2-VL");
    assert_eq!((ok[0].head_dim, ok[0].spec.base), (80, 1e4));
    let bad_key = |config: Value, key: &str| {
        let e = RotaryModule::from_hf_vision_config(&config).expect_err(key);
        match &e {
            Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) => {
                assert_eq!(k, key, "{e}")
            }
            _ => panic!("{key}: {e}"),
        }
    };
    bad_key(
        qwen(json!({"rope_parameters": {"rope_type": "yarn"}})),
        "rope_parameters.rope_type",
    );
    bad_key(qwen(json!({"rope_parameters": 3})), "rope_parameters");
    bad_key(
        qwen(json!({"embed_dim": 1290, "num_heads": 16})),
        "embed_dim",
    );
    bad_key(
        qwen(json!({"embed_dim": 1440, "num_heads": 16})),
        "head_dim",
    );
    bad_key(qwen(json!({"num_heads": 0})), "num_heads");
    bad_key(qwen(json!(5)), "vision_config");
    bad_key(json!({"vision_config": {}}), "model_type");
    let e = RotaryModule::from_hf_vision_config(&qwen(json!({"rope_theta": 0.5})))
        .expect_err("theta below 1");
    assert!(
        matches!(e, Error::InvalidParameter { what: "base", .. }),
        "{e}"
    );
    let e = RotaryModule::from_hf_vision_config(&qwen(json!({"head_dim": 1u64 << 40})))
        .expect_err("huge head");
    assert!(matches!(e, Error::InvalidHeadDim { .. }), "{e}");
    let e = RotaryModule::from_hf_vision_config(&json!({"model_type": "sam3"})).expect_err("SAM 3");
    assert!(
        matches!(&e, Error::Frequency(FrequencyError::FamilyNotRead { reason, .. })
            if reason.contains("Sam3ViTRotaryEmbedding")),
        "{e}"
    );
    let e = RotaryModule::from_hf_vision_config(&json!({"model_type": "llama"})).expect_err("text");
    assert!(
        matches!(
            e,
            Error::Frequency(FrequencyError::UnsupportedModelType { .. })
        ),
        "{e}"
    );
    let llava =
        json!({"model_type": "llava", "vision_config": {"model_type": "pixtral", "head_dim": 64}});
    let read = RotaryModule::from_hf_vision_config(&llava).expect("Pixtral inside LLaVA");
    assert_eq!(read[0].module, "PixtralVisionRotaryEmbedding");
    assert_eq!(
        read[0].spec.mrope.map(|m| m.frequencies),
        Some(wgpu_posenc::AxisFrequencies::Dealt)
    );
}
