//! transformers' vision towers read from the model's `config.json`
//! (`RotaryModule::from_hf_vision_config`) against the rotary modules transformers 5.24 builds
//! from it and the attention's own apply function (`tests/data/hf/vision_rope.py`), and the
//! matrix of every family whose encoder rotates (`tests/data/hf/VISION.md`, written with
//! `POSENC_WRITE_MATRIX=1`).

use serde_json::Value;
use wgpu_posenc::{
    Dims, Error, FrequencyError, HF_VISION_ROPE_NOT_READ, Layout, PositionAxis, Positions,
    RotaryModule, reference,
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
        let modules = module_list(family);
        let got = RotaryModule::from_hf_vision_config(&family["config"]);
        match got {
            Ok(read_modules) => {
                let (row, whole) = check_family(mt, family, &read_modules, cases);
                match whole {
                    true => read += 1,
                    false => partly += 1,
                }
                rows.push(row);
            }
            Err(Error::Frequency(FrequencyError::FamilyNotRead { reason, .. })) => {
                refused += 1;
                let listed = HF_VISION_ROPE_NOT_READ.iter().any(|r| r.0 == mt);
                assert!(listed, "{mt}: refused, not listed");
                let reason = reason.replace('|', "/");
                rows.push(format!("| `{mt}` | {modules} | refused | | {reason} |"));
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

/// A read family: each module read is one the family builds and rotates as its golden case
/// does; its matrix row, and whether every module of the family was read.
fn check_family(
    mt: &str,
    family: &Value,
    read: &[RotaryModule],
    cases: &[Value],
) -> (String, bool) {
    let listed: Vec<(&str, &str)> = family["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap_or(""),
                m["class"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(!read.is_empty(), "{mt}: read as no module");
    for rope in read {
        // One path, or one a layer (`{i}`): each module it names is checked against its
        // case, each distinct case once.
        let named: Vec<&str> = listed
            .iter()
            .filter(|&&(p, c)| c == rope.module && names(rope.path, p))
            .map(|&(p, _)| p)
            .collect();
        assert!(
            !named.is_empty(),
            "{mt}: {} {} not in {listed:?}",
            rope.path,
            rope.module
        );
        let mut seen: Vec<*const Value> = Vec::new();
        for path in named {
            let case = find_case(cases, mt, path);
            if !seen.contains(&(case as *const Value)) {
                seen.push(case);
                check_case(mt, rope, case);
            }
        }
    }
    // A family whose other encoder rotates otherwise is read only in part.
    let others: Vec<&str> = listed
        .iter()
        .filter(|(p, _)| !read.iter().any(|r| names(r.path, p)))
        .map(|&(_, c)| c)
        .collect();
    let modules = module_list(family);
    let what: Vec<String> = read.iter().map(describe).collect();
    let (status, reason) = match others.is_empty() {
        true => ("read", String::new()),
        false => ("read in part", format!("not read: {}", others.join(", "))),
    };
    let row = format!(
        "| `{mt}` | {modules} | {status} | {} | {reason} |",
        what.join("; ")
    );
    (row, others.is_empty())
}

/// A family's module classes in the order it builds them, each once, with its count where
/// it holds several (one a layer).
fn module_list(family: &Value) -> String {
    let classes: Vec<&str> = family["modules"]
        .as_array()
        .expect("modules")
        .iter()
        .map(|m| m["class"].as_str().unwrap_or(""))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (i, c) in classes.iter().enumerate() {
        if classes[..i].contains(c) {
            continue;
        }
        match classes.iter().filter(|x| *x == c).count() {
            1 => out.push(format!("`{c}`")),
            n => out.push(format!("`{c}` x {n}")),
        }
    }
    out.join(", ")
}

/// Whether a read module's path (`{i}` standing for a layer's number) names `path`.
fn names(template: &str, path: &str) -> bool {
    match template.split_once("{i}") {
        None => template == path,
        Some((head, tail)) => path
            .strip_prefix(head)
            .and_then(|p| p.strip_suffix(tail))
            .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit())),
    }
}

/// The golden case of module `path` of `mt`, its numbers where they were recorded once for
/// modules that compute the same ones (`same_as`, `same_as_path`).
fn find_case<'a>(cases: &'a [Value], mt: &str, path: &str) -> &'a Value {
    let case = cases
        .iter()
        .find(|c| c["model_type"] == mt && c["path"] == path)
        .unwrap_or_else(|| panic!("{mt}: {path} read, but no golden case"));
    match case["same_as"].as_str() {
        Some(other) => cases
            .iter()
            .find(|c| {
                c["model_type"] == other
                    && c["path"] == case["same_as_path"]
                    && c.get("same_as").is_none()
            })
            .unwrap_or_else(|| panic!("{mt}: same as {other}, not recorded")),
        None => case,
    }
}

/// The module's rotation of the recorded tokens (its cos and sin applied by the attention's
/// own function, in f32) against the f64 reference, within what f32 angles of those positions
/// allow; the GPU against the reference.
/// A case's positions as the kernel reads them: 1-D modules one f32 position a token
/// (TimesFM's may be negative); else `[t, h, w]` planes, u32 where every position is a whole
/// number from 0, else f32 (SAM 3's global layers). With the token count, whether they are
/// 1-D and f32, and the largest magnitude.
struct CasePositions {
    words: Vec<u32>,
    n: usize,
    one_d: bool,
    float: bool,
    far: f64,
}

fn case_positions(mt: &str, case: &Value) -> CasePositions {
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
    let one_d = names == ["p"];
    let whole = rows.iter().flatten().all(|&p| p >= 0.0 && p.fract() == 0.0);
    let float = one_d || !whole;
    let mut axes = vec![0u32; if one_d { n } else { 3 * n }];
    for (name, row) in names.iter().zip(&rows) {
        let plane = match *name {
            "t" | "p" => 0,
            "h" => 1,
            "w" => 2,
            other => panic!("{mt}: position row {other}"),
        };
        for (k, &p) in row.iter().enumerate() {
            axes[plane * n + k] = if float {
                (p as f32).to_bits()
            } else {
                p as u32
            };
        }
    }
    let far = rows.iter().flatten().fold(1.0f64, |m, &p| m.max(p.abs()));
    CasePositions {
        words: axes,
        n,
        one_d,
        float,
        far,
    }
}

fn check_case(mt: &str, rope: &RotaryModule, case: &Value) {
    let CasePositions {
        words: axes,
        n,
        one_d,
        float,
        far,
    } = case_positions(mt, case);
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
    // q is [token][head][lane]; a module whose positions index the heads (NeuCodec's) turns
    // the view with heads and tokens swapped, one position a head.
    let tokens = q.len() as u64 / (heads * d);
    let bshd = Layout::bshd(Dims {
        batch: 1,
        seq: tokens,
        heads,
        head_dim: d,
    });
    let layout = match rope.position_axis {
        PositionAxis::Token => bshd,
        PositionAxis::Head => bshd.heads_as_tokens(),
    };
    assert_eq!(layout.shape[2], n as u64, "{mt}: positions");
    assert_eq!(q.len() as u64, tokens * heads * d, "{mt}: q");
    let mut want = q.clone();
    reference::rope(
        &rope.spec,
        &layout,
        &mut want,
        match (one_d, float) {
            (true, _) => Positions::Float(&axes[..]),
            (false, true) => Positions::FloatAxes(&axes[..]),
            (false, false) => Positions::Axes(&axes[..]),
        },
    );
    let big = q.iter().fold(1.0f64, |m, &v| m.max(v.abs()));
    // f32 frequencies times f32 positions, f32 cos and sin and products: a few units in the
    // last place of the largest angle (at the fastest frequency, in radians: 2 pi for
    // DINOv3's periods), times the values.
    let r = rope.spec.rotary_dim.unwrap_or(d);
    let (freqs, _) = reference::frequencies(&rope.spec, r, 1).expect("frequencies");
    let fastest = freqs.iter().fold(1.0f64, |m, &(hi, _)| m.max(hi));
    let allowed = 4.0 * big * (1.0 + far * fastest) * 2f64.powi(-23) + 1e-6;
    let e_module = max_diff(&theirs, &want);
    assert!(
        e_module <= allowed,
        "{mt}: {e_module:e} from transformers (allowed {allowed:e})"
    );
    let q32: Vec<f32> = q.iter().map(|&v| v as f32).collect();
    let got = rotate_with(&rope.spec, layout, &q32, &axes, |v| match (one_d, float) {
        (true, _) => Positions::Float(v),
        (false, true) => Positions::FloatAxes(v),
        (false, false) => Positions::Axes(v),
    });
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
    let rotated = r.spec.rotary_dim.unwrap_or(r.head_dim);
    let Some(m) = r.spec.mrope else {
        let by = match r.position_axis {
            PositionAxis::Token => "",
            PositionAxis::Head => ", each head at its index",
        };
        return format!(
            "1-D, head {}, {rotated} lanes rotated, base {}, {:?} pairs{by}",
            r.head_dim, r.spec.base, r.spec.pair_layout
        );
    };
    let unit = match r.spec.frequency_unit {
        wgpu_posenc::FrequencyUnit::Radians => "",
        wgpu_posenc::FrequencyUnit::Revolutions => " (revolutions a position)",
    };
    let blocks = match r.spec.pair_blocks {
        1 => String::new(),
        n => format!(" in {n} blocks"),
    };
    let blocks = match r.spec.table_layout {
        Some(t) => format!("{blocks}, cos and sin laid out {t:?}"),
        None => blocks,
    };
    format!(
        "head {}, {rotated} lanes rotated; t/h/w pairs {:?}, {:?} order, {:?} frequencies{unit}, \
         base {}, {:?} pairs{blocks}",
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
         encoders listed, the axial and 1-D ones run on the CPU and applied by the attention's own \
         function) and `RotaryModule::from_hf_vision_config`; do not edit. `read`: the \
         encoder's rotation read from the model's `config.json` and matching transformers at \
         the recorded tokens; `read in part`: one encoder's module read, another's not; \
         `refused`: a typed error that names the module and says why.\n\n\
         **{read} of {total} read ({:.0} %), {partly} read in part (a module of another \
         encoder not read), {refused} refused.**\n\n\
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

/// `config` is refused with a typed error naming `key`.
fn bad_key(config: Value, key: &str) {
    let e = RotaryModule::from_hf_vision_config(&config).expect_err(key);
    match &e {
        Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) => {
            assert_eq!(k, key, "{e}")
        }
        _ => panic!("{key}: {e}"),
    }
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
    bad_key(
        qwen(json!({"rope_parameters": {"rope_type": "yarn"}})),
        "rope_parameters.rope_type",
    );
    bad_key(qwen(json!({"rope_parameters": 3})), "rope_parameters");
    // EfficientLoFTR's lists must fill a quarter of its width each (its module's broadcast
    // fails otherwise); its default factor of 4 does.
    let loftr = |p: f64| {
        json!({"model_type": "efficientloftr", "hidden_size": 256, "num_attention_heads": 8,
               "rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                   "partial_rotary_factor": p}})
    };
    let ok = RotaryModule::from_hf_vision_config(&loftr(4.0)).expect("EfficientLoFTR");
    assert_eq!(ok[0].head_dim, 256);
    bad_key(loftr(1.0), "partial_rotary_factor");
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
    // DINOv3's periods, with the class's defaults (CHMv2's backbone: 1024 over 16 heads).
    for (config, d) in [
        (json!({"model_type": "dinov3_vit"}), 64),
        (json!({"model_type": "chmv2"}), 64),
        (
            json!({"model_type": "dinov3_vit", "hidden_size": 768, "num_attention_heads": 6}),
            128,
        ),
    ] {
        let read = RotaryModule::from_hf_vision_config(&config).expect("DINOv3");
        let spec = &read[0].spec;
        assert_eq!((read[0].head_dim, spec.base), (d, 100.0), "{config}");
        assert_eq!(spec.frequency_unit, wgpu_posenc::FrequencyUnit::Revolutions);
    }
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

/// A 1-D encoder's config: its rope type must be the default one, its rotated width even and
/// within the head; CLVP's width from a huge head count saturates.
#[test]
fn encoder_configs_with_bad_keys_are_typed_errors() {
    use serde_json::json;
    // A 1-D encoder: its rope type must be the default one, its rotated width even.
    let asr = |audio: Value| json!({"model_type": "glmasr", "audio_config": audio});
    let read = RotaryModule::from_hf_vision_config(&asr(json!({}))).expect("GLM-ASR");
    assert_eq!((read[0].head_dim, read[0].spec.rotary_dim), (64, Some(32)));
    bad_key(
        asr(json!({"rope_parameters": {"rope_type": "axial"}})),
        "rope_parameters.rope_type",
    );
    bad_key(
        asr(json!({"rope_parameters": {"partial_rotary_factor": 0.3}})),
        "partial_rotary_factor",
    );
    bad_key(
        asr(json!({"partial_rotary_factor": 0})),
        "partial_rotary_factor",
    );
    // CLVP's width from a huge head count: no overflow, its floor of 32 lanes.
    let clvp = json!({"model_type": "clvp", "speech_config": {"head_dim": 64, "num_attention_heads": u64::MAX}});
    let read = RotaryModule::from_hf_vision_config(&clvp).expect("CLVP");
    assert_eq!(read[0].spec.rotary_dim, Some(32));
}

/// Published checkpoint configs (Qwen2-VL-7B-Instruct as first published, without rope
/// parameters in its tower, and re-saved by transformers 5; Qwen3-VL-8B-Instruct) read as
/// transformers reads them (`tests/data/hf/vision_published.py`): the module's path and class,
/// the attention's head width, and each pair's frequency the module's `inv_freq` (height
/// pairs, then width pairs).
#[test]
fn published_vision_configs_read_as_transformers_reads_them() {
    let data = test_data("hf/vision_published.json");
    for tower in data["towers"].as_array().expect("towers") {
        let file = tower["file"].as_str().expect("file");
        let config = test_data(&format!("hf/configs/{file}"));
        let read = RotaryModule::from_hf_vision_config(&config).expect(file);
        assert_eq!(read.len(), 1, "{file}");
        let rope = &read[0];
        assert_eq!(Some(rope.path), tower["path"].as_str(), "{file}");
        assert_eq!(Some(rope.module), tower["module"].as_str(), "{file}");
        assert_eq!(rope.head_dim, u(&tower["head_dim"]), "{file}");
        let theirs = list(&tower["inv_freq"]);
        let (ours, _) = reference::frequencies(&rope.spec, rope.head_dim, 1).expect(file);
        assert_eq!(ours.len(), 2 * theirs.len(), "{file}: pairs");
        for (j, &(hi, lo)) in ours.iter().enumerate() {
            let want = theirs[j % theirs.len()];
            // Their f32 power and reciprocal: within a few roundings of the real number
            // (neighbouring frequencies differ by a factor of 0.6 or less).
            assert!(
                ((hi + lo) - want).abs() <= 1e-6 * want,
                "{file}: pair {j}: {} vs {want}",
                hi + lo
            );
        }
    }
}

/// PE Video's frame encoder from the timm architecture its `TimmWrapper` config names (the
/// default's, the gigantic one's 96-wide heads, `model_args` over them); a name that is not a
/// PE ViT, a `model_args` key that would change the rotation, or `model_args` that is not an
/// object: typed errors that name the key.
#[test]
fn pe_video_towers_read_from_their_timm_architectures() {
    use serde_json::json;
    let pe = |vision: Value| json!({"model_type": "pe_video_encoder", "vision_config": vision});
    let tower = |config: &Value| {
        let read = RotaryModule::from_hf_vision_config(config).expect("PE Video");
        let m = read
            .into_iter()
            .find(|m| m.module == "RotaryEmbeddingCat")
            .expect("the timm tower");
        (m.head_dim, m.spec.base, m.spec.pair_layout)
    };
    let il = wgpu_posenc::PairLayout::Interleaved;
    assert_eq!(
        tower(&json!({"model_type": "pe_video_encoder"})),
        (64, 1e4, il)
    );
    let giant = json!({"architecture": "vit_pe_spatial_gigantic_patch14_448"});
    assert_eq!(tower(&pe(giant)), (96, 1e4, il));
    let args = json!({"architecture": "vit_pe_core_base_patch16_224",
                      "model_args": {"img_size": 448, "num_heads": 6, "rope_temperature": 100}});
    assert_eq!(tower(&pe(args)), (128, 100.0, il));
    bad_key(
        pe(json!({"architecture": "vit_base_patch16_224"})),
        "architecture",
    );
    bad_key(pe(json!({"architecture": 7})), "architecture");
    bad_key(
        pe(json!({"model_args": {"rope_type": "mixed"}})),
        "model_args.rope_type",
    );
    bad_key(pe(json!({"model_args": [1]})), "model_args");
    bad_key(
        pe(json!({"model_args": {"embed_dim": 1000, "num_heads": 16}})),
        "model_args.embed_dim",
    );
}

/// V-JEPA 2's encoder and predictor from the class's defaults, NeuCodec's heads by their
/// index; MusicFlamingo refused by name.
#[test]
fn vjepa2_and_refused_encoders_read_as_transformers_builds_them() {
    use serde_json::json;
    // The class's defaults, theta 10 000 whatever the
    // config says; a width the heads do not divide, or a head too narrow for three axes, named.
    let read =
        RotaryModule::from_hf_vision_config(&json!({"model_type": "vjepa2", "rope_theta": 5}))
            .expect("V-JEPA 2");
    let got: Vec<_> = read
        .iter()
        .map(|m| {
            (
                m.head_dim,
                m.spec.rotary_dim,
                m.spec.base,
                m.spec.table_layout,
            )
        })
        .collect();
    let tiled = Some(wgpu_posenc::PairLayout::HalfSplit);
    assert_eq!(
        got,
        [(64, Some(60), 1e4, tiled), (32, Some(30), 1e4, tiled)]
    );
    bad_key(
        json!({"model_type": "vjepa2", "pred_num_attention_heads": 7}),
        "pred_hidden_size",
    );
    bad_key(
        json!({"model_type": "vjepa2", "hidden_size": 20, "num_attention_heads": 5}),
        "head_dim",
    );
    // NeuCodec's heads turn by their index; MusicFlamingo's time embedding is refused by name.
    let read =
        RotaryModule::from_hf_vision_config(&json!({"model_type": "neucodec"})).expect("NeuCodec");
    assert_eq!(read[0].position_axis, PositionAxis::Head);
    let e = RotaryModule::from_hf_vision_config(&json!({"model_type": "musicflamingo"}))
        .expect_err("MusicFlamingo");
    assert!(
        matches!(&e, Error::Frequency(FrequencyError::FamilyNotRead { reason, .. })
            if reason.contains("MusicFlamingoRotaryEmbedding")),
        "{e}"
    );
}
