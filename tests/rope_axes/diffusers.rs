//! Every diffusers transformer's rotary modules read from its `config.json`
//! (`RotaryModule::from_diffusers_config`) against the modules diffusers builds from it
//! (`tests/data/diffusers/rope_configs.py`), and the matrix of them
//! (`tests/data/diffusers/ROPE.md`, written with `POSENC_WRITE_MATRIX=1`).

use serde_json::Value;
use wgpu_posenc::{
    DIFFUSERS_WITHOUT_ROPE_MODULE, Dims, Error, FrequencyError, Layout, PairLayout, RotaryModule,
    reference,
};

use super::common::{Rng, test_data};
use super::{axes_or_1d, list, rotate_with, u};

/// Every diffusers transformer's rotary modules (`tests/data/diffusers/rope_configs.py`: each
/// class built from its own config, its rotary modules run on the CPU at the pipelines' kind
/// of positions): the config read by `RotaryModule::from_diffusers_config` gives each
/// module's path, class and pair layout, and rotates as the module's cos and sin do at the
/// sampled tokens; the classes without a module read as none, the others refused by name.
#[test]
fn diffusers_rotary_modules_read_from_their_configs() {
    let data = test_data("diffusers/rope_configs.json");
    let builds = data["builds"].as_object().expect("builds");
    let (mut read, mut refused, mut rotating) = (0, 0, 0);
    let mut rows = Vec::new();
    for (label, build) in builds {
        let class = label.split('#').next().expect("class");
        let Some(config) = build.get("config") else {
            // Does not build in diffusers either.
            assert!(DIFFUSERS_WITHOUT_ROPE_MODULE.contains(&class), "{label}");
            let error = build["error"].as_str().unwrap_or("");
            rows.push(format!("| `{label}` | — | not built | | {error} |"));
            continue;
        };
        let modules = build["rope"].as_array().expect("rope");
        let names: Vec<String> = modules
            .iter()
            .map(|m| {
                format!(
                    "`{}` {}",
                    m["path"].as_str().unwrap_or(""),
                    m["module"].as_str().unwrap_or("")
                )
            })
            .collect();
        // Mochi's frequencies are weights: read with its checkpoint's tensor.
        let mochi = class == "MochiTransformer3DModel";
        let got = match mochi {
            true => RotaryModule::from_diffusers_checkpoint(config, &mut mochi_weights()),
            false => RotaryModule::from_diffusers_config(config),
        };
        if modules.is_empty() {
            assert!(matches!(&got, Ok(v) if v.is_empty()), "{label}: {got:?}");
            rows.push(format!("| `{label}` | — | no rotary module | | |"));
            continue;
        }
        rotating += 1;
        let read_modules = match got {
            Err(Error::Frequency(FrequencyError::DiffusersRopeNotRead {
                module, reason, ..
            })) => {
                let named = modules.iter().any(|m| m["module"].as_str() == Some(module));
                assert!(
                    named,
                    "{label}: refused naming {module}, which it does not hold"
                );
                refused += 1;
                rows.push(format!(
                    "| `{label}` | {} | refused | | {reason} |",
                    names.join(", ")
                ));
                continue;
            }
            other => other.expect("read"),
        };
        let specs: Vec<String> = read_modules.iter().map(describe).collect();
        let with = if mochi {
            " (and `model.safetensors`)"
        } else {
            ""
        };
        rows.push(format!(
            "| `{label}` | {} | read{with} | {} | |",
            names.join(", "),
            specs.join("; ")
        ));
        // Every module the class holds, in its order, each run by diffusers.
        let mochi_golden = [mochi_golden()];
        let golden = match mochi {
            true => &mochi_golden[..],
            false => build["golden"].as_array().expect("golden"),
        };
        assert_eq!(read_modules.len(), modules.len(), "{label}");
        assert_eq!(golden.len(), modules.len(), "{label}: every module run");
        for ((rope, m), g) in read_modules.iter().zip(modules).zip(golden) {
            assert_eq!(Some(rope.module), m["module"].as_str(), "{label}");
            assert_eq!(Some(rope.path), m["path"].as_str(), "{label}");
            check_module(label, rope, g);
        }
        read += 1;
    }
    eprintln!("{rotating} builds with a rotary module: {read} read, {refused} refused by name");
    assert_eq!(read + refused, rotating);
    check_matrix(&data, &rows, [builds.len(), rotating, read, refused]);
    // PRX's axes must cover its head (diffusers raises), not read as a partial rotation.
    let mut short = builds["PRXTransformer2DModel"]["config"].clone();
    short["axes_dim"] = serde_json::json!([16, 16]);
    let e = RotaryModule::from_diffusers_config(&short).expect_err("axes short of the head");
    assert!(e.to_string().contains("axes_dim"), "{e}");
    // HiDream's default axes (32, 32) cover two of its three id columns: diffusers' own
    // module fails on them, and the reader says so rather than reading two axes.
    let mut two = builds["HiDreamImageTransformer2DModel"]["config"].clone();
    two["axes_dims_rope"] = serde_json::json!([32, 32]);
    let e = RotaryModule::from_diffusers_config(&two).expect_err("two axes for three ids");
    assert!(e.to_string().contains("axes_dims_rope"), "{e}");
    // A rope_type diffusers does not know is a bad key.
    let mut split = builds["LTX2VideoTransformer3DModel"]["config"].clone();
    split["rope_type"] = serde_json::json!("neox");
    let e = RotaryModule::from_diffusers_config(&split).expect_err("unknown rope_type");
    assert!(e.to_string().contains("rope_type"), "{e}");
    // AnyFlow-FAR's compressed tokens rotate by the centre of their block only while the
    // block's mean of `e^(i f p)` keeps its sign: a downscale of 7 (or 0) is refused.
    for bad in [[1, 14, 14], [1, 1, 1]] {
        let mut far = builds["AnyFlowFARTransformer3DModel"]["config"].clone();
        far["compressed_patch_size"] = serde_json::json!(bad);
        let e = RotaryModule::from_diffusers_config(&far).expect_err("downscale");
        assert!(
            e.to_string().contains("compressed_patch_size"),
            "{bad:?}: {e}"
        );
    }
    // The layered Qwen-Image builds another module: refused by its name, not read as the
    // default one.
    let mut layered = builds["QwenImageTransformer2DModel"]["config"].clone();
    layered["use_layer3d_rope"] = Value::Bool(true);
    let e = RotaryModule::from_diffusers_config(&layered).expect_err("layered");
    assert!(
        matches!(
            e,
            Error::Frequency(FrequencyError::DiffusersRopeNotRead {
                module: "QwenEmbedLayer3DRope",
                ..
            })
        ),
        "{e}"
    );
}

/// SANA-WM's config: without `use_pe` no rotary module, a `pos_embed_type` other than
/// `wan_rope` (diffusers raises) or a head whose second half is no whole pairs named; its
/// camera branch the second half of the head at the main lists' first frequencies.
#[test]
fn sana_wm_configs_read_as_diffusers_builds_them() {
    let data = test_data("diffusers/rope_configs.json");
    let base = &data["builds"]["SanaWMTransformer3DModel"]["config"];
    let with = |key: &str, v: Value| {
        let mut c = base.clone();
        c[key] = v;
        RotaryModule::from_diffusers_config(&c)
    };
    let none = with("use_pe", Value::Bool(false)).expect("no rope");
    assert!(none.is_empty(), "{none:?}");
    let e = with("pos_embed_type", "sincos".into()).expect_err("pos_embed_type");
    assert!(e.to_string().contains("pos_embed_type"), "{e}");
    let e = with("linear_head_dim", 90.into()).expect_err("odd half");
    assert!(e.to_string().contains("linear_head_dim"), "{e}");
    let read = with("linear_head_dim", 64.into()).expect("a 64-wide head");
    let camera = &read[1].spec;
    assert_eq!((read[1].path, camera.leading_lanes), ("rope[camera]", 32));
    // r = 32: 16 pairs, t 16 / 2 - 2 * 5 = 6, h = w = 5, of lists 24, 20 and 20 lanes wide.
    let m = camera.mrope.expect("axes");
    assert_eq!(m.section, [6, 5, 5]);
    let want = [1e4f64.powf(12.0 / 24.0), 1e4f64.powf(10.0 / 20.0)];
    let bases = camera.axis_bases.expect("bases");
    assert_eq!([bases[0], bases[1], bases[2]], [want[0], want[1], want[1]]);
}

/// Mochi's `pos_frequencies` as its checkpoint holds them (`mochi_rope.py`:
/// `mochi_pos_frequencies.safetensors`, the parameter's own name, f32).
fn mochi_weights() -> std::fs::File {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/diffusers/mochi_pos_frequencies.safetensors"
    );
    std::fs::File::open(path).expect("mochi_pos_frequencies.safetensors")
}

/// `MochiRoPE` run by diffusers with that table (`mochi_rope.json`) as a golden module at
/// its sampled tokens, at the positions `PositionGrid::mochi` writes on the GPU (checked
/// within two f32 roundings of the module's own).
fn mochi_golden() -> Value {
    let data = test_data("diffusers/mochi_rope.json");
    let grid_shape: Vec<u32> = data["grid"]
        .as_array()
        .expect("grid")
        .iter()
        .map(|g| u(g) as u32)
        .collect();
    let grid = wgpu_posenc::PositionGrid::mochi([grid_shape[0], grid_shape[1], grid_shape[2]]);
    let made = super::common::ctx()
        .position_grid_host(&grid, 1)
        .expect("grid");
    let n = grid.tokens() as usize;
    let mut positions = Vec::new();
    for (k, t) in data["tokens"]
        .as_array()
        .expect("tokens")
        .iter()
        .enumerate()
    {
        let t = u(t) as usize;
        let mine: Vec<f64> = (0..3).map(|a| f64::from(made[a * n + t])).collect();
        for (a, (&p, &q)) in mine.iter().zip(&list(&data["positions"][k])).enumerate() {
            let ulp = f64::from(f32::EPSILON) * q.abs().max(1.0);
            assert!(
                (p - q).abs() <= 2.0 * ulp,
                "Mochi token {t} axis {a}: {p} vs the module's {q}"
            );
        }
        positions.push(mine);
    }
    serde_json::json!({
        "layout": "interleaved", "pairs": u(&data["head_dim"]) / 2, "lead": 0,
        "heads": data["heads"], "positions": positions, "cos": data["cos"], "sin": data["sin"],
    })
}

/// `rope` against the module's cos and sin at the golden tokens: the f64 reference within
/// what f32 angles of those positions allow, and the GPU within the contract of the reference.
fn check_module(label: &str, rope: &RotaryModule, golden: &Value) {
    let layout = match golden["layout"].as_str().expect("layout") {
        "interleaved" => PairLayout::Interleaved,
        _ => PairLayout::HalfSplit,
    };
    assert_eq!(rope.spec.pair_layout, layout, "{label}");
    let table = golden["table"].as_str().map(|_| PairLayout::Interleaved);
    assert_eq!(rope.spec.table_layout, table, "{label}: the table's layout");
    let pairs = u(&golden["pairs"]);
    // LTX's leading lanes, before the rotated pairs.
    let lead = golden["lead"].as_u64().unwrap_or(0);
    assert_eq!(rope.spec.leading_lanes, lead, "{label}: leading lanes");
    let r = rope
        .spec
        .rotary_dim
        .unwrap_or(rope.head_dim - rope.spec.leading_lanes);
    assert_eq!(r / 2, pairs, "{label}: rotated pairs");
    let positions: Vec<Vec<f64>> = golden["positions"]
        .as_array()
        .expect("positions")
        .iter()
        .map(list)
        .collect();
    let n = positions.len();
    // `[t.. | h.. | w..]`, two-axis models leaving t at zero; or one a token.
    let planes = match (&rope.spec.mrope, &rope.spec.learned) {
        (Some(m), _) => m.planes(),
        (None, Some(t)) => t.planes(),
        (None, None) => 1,
    };
    // Helios' and FramePack's pooled tokens: `pool` sets of axes each, `[pool, planes, seq]`.
    let pool = golden["pool"].as_u64().unwrap_or(1) as usize;
    assert_eq!(rope.spec.pool as usize, pool, "{label}: pooled sets");
    let (axes_mode, rows) = (planes > 1, planes as usize);
    let mut axes = vec![0f32; pool * rows * n];
    for (k, p) in positions.iter().enumerate() {
        let per_set = p.len() / pool;
        assert!(
            per_set <= rows && per_set * pool == p.len(),
            "{label}: {p:?}"
        );
        let skip = rows - per_set;
        for (i, &v) in p.iter().enumerate() {
            let (j, a) = (i / per_set, i % per_set);
            axes[((j * rows) + a + skip) * n + k] = v as f32;
        }
    }
    let words: Vec<u32> = axes.iter().map(|x| x.to_bits()).collect();
    // LTX-2's split tables differ from head to head: every head of the module.
    let (heads, d) = (golden["heads"].as_u64().unwrap_or(2), rope.head_dim);
    // OmniGen's LongRoPE chooses its factors by the largest position + 1, as its module does.
    let mut spec = rope.spec.clone();
    if spec.scaling.needs_seq_len() {
        let last = axes.iter().fold(0f32, |m, &p| m.max(p));
        spec.scaling_seq_len = Some(last as u64 + 1);
    }
    let spec = &spec;
    let shape = Dims {
        batch: 1,
        seq: n as u64,
        heads,
        head_dim: d,
    };
    let q = Rng::new(29).values(n * (heads * d) as usize);
    let got = rotate_with(spec, Layout::bshd(shape), &q, &words, |v| {
        axes_or_1d(v, axes_mode)
    });
    let mut want: Vec<f64> = q.iter().map(|&v| f64::from(v)).collect();
    let host = axes_or_1d(&words[..], axes_mode);
    reference::rope(spec, &Layout::bshd(shape), &mut want, host);
    let ours = got
        .iter()
        .zip(&want)
        .map(|(&a, &b)| (f64::from(a) - b).abs())
        .fold(0.0, f64::max);
    assert!(ours <= 4e-7, "{label}: {ours:e} from the reference");
    // The fastest pair's radians a position (LTX's reach (pi/2) theta), at least 1.
    let (freqs, _) =
        reference::frequencies(spec, r, spec.scaling_seq_len.unwrap_or(0)).expect("frequencies");
    let fastest = match &spec.learned {
        Some(t) => t.values.iter().fold(1.0f64, |m, v| m.max(v.abs())),
        None => freqs.iter().fold(1.0f64, |m, f| m.max(f.0)),
    };
    // The module's rotation of the same rows, from its cos and sin.
    let mut theirs = 0.0f64;
    for (k, p) in positions.iter().enumerate() {
        let per_head = golden.get("heads").is_some();
        let far = p.iter().fold(1.0f64, |m, &v| m.max(v.abs())) * fastest;
        // f32 angles of a position `far` (and f32 cos, sin): a few units in their last place.
        let allowed = 2.0 * (2e-7 + 8.0 * far * 2f64.powi(-24));
        for h in 0..heads as usize {
            let (c, s) = match per_head {
                true => (list(&golden["cos"][k][h]), list(&golden["sin"][k][h])),
                false => (list(&golden["cos"][k]), list(&golden["sin"][k])),
            };
            let row = (k * heads as usize + h) * d as usize;
            let x = &q[row..row + d as usize];
            let mut out: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            // ERNIE-Image's cos and sin a lane (`table`), else a pair.
            let lanes = golden.get("table").is_some();
            for j in 0..pairs as usize {
                let (i0, i1) = match layout {
                    PairLayout::Interleaved => (2 * j, 2 * j + 1),
                    PairLayout::HalfSplit => (j, j + pairs as usize),
                };
                let (k0, k1) = if lanes { (i0, i1) } else { (j, j) };
                let (i0, i1) = (i0 + lead as usize, i1 + lead as usize);
                let (a, b) = (f64::from(x[i0]), f64::from(x[i1]));
                out[i0] = a * c[k0] - b * s[k0];
                out[i1] = a * s[k1] + b * c[k1];
            }
            let e = out
                .iter()
                .zip(&want[row..row + d as usize])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                e <= allowed,
                "{label}: token {k} ({p:?}) head {h}: {e:e} from the module"
            );
            theirs = theirs.max(e);
        }
    }
    eprintln!(
        "{label} ({}, {:?}): reference within {theirs:.1e} of the module at {n} tokens, GPU \
         {ours:.1e} of the reference",
        rope.module,
        rope.spec.mrope.map(|m| m.section)
    );
}

/// What a read module rotates: its axes (pairs each), base, pair layout, rotated lanes and
/// scaling.
fn describe(r: &RotaryModule) -> String {
    let s = &r.spec;
    let layout = match s.pair_layout {
        PairLayout::Interleaved => "interleaved",
        PairLayout::HalfSplit => "half-split",
    };
    let axes = match s.mrope {
        None if s.learned.is_some() => {
            let t = s.learned.as_ref().expect("learned");
            format!("learned table of {} axes x {} heads", t.axes, t.heads)
        }
        None => "1-D".to_string(),
        Some(m) if m.fourth > 0 => {
            let [t, h, w] = m.section;
            format!("axes [{t}, {h}, {w}, {}]", m.fourth)
        }
        Some(m) if m.frequencies == wgpu_posenc::AxisFrequencies::Rising => {
            format!("rising from pi/2, axes {:?} {:?}", m.section, m.order)
        }
        Some(m) if m.frequencies == wgpu_posenc::AxisFrequencies::PerAxis => {
            format!("axes {:?}", m.section)
        }
        Some(m) => format!("M-RoPE {:?} {:?}", m.section, m.order),
    };
    let base = match s.axis_bases {
        Some(b) => format!("bases {:?}", &b[..3]),
        None => format!("base {}", s.base),
    };
    let r_dim = s.rotary_dim.unwrap_or(r.head_dim - s.leading_lanes);
    let scaling = s.scaling.name();
    let lead = match s.leading_lanes {
        0 => String::new(),
        n => format!(" after {n}"),
    };
    let table = match s.table_layout {
        Some(PairLayout::Interleaved) => ", cos and sin a lane laid out for interleaved pairs",
        Some(PairLayout::HalfSplit) => ", cos and sin a lane laid out for half-split pairs",
        None => "",
    };
    let pooled = match s.pool {
        1 => String::new(),
        k => format!(", cos and sin the mean of {k} position sets"),
    };
    format!(
        "`{}`: {axes}, {base}, {layout}, {r_dim} of {} lanes{lead}, {scaling}{pooled}{table}",
        r.path, r.head_dim
    )
}

/// `tests/data/diffusers/ROPE.md` as the rows say, written with `POSENC_WRITE_MATRIX=1`,
/// else compared with the committed file.
fn check_matrix(data: &Value, rows: &[String], [builds, rotating, read, refused]: [usize; 4]) {
    let version = data["diffusers"].as_str().unwrap_or("?");
    let text = format!(
        "# diffusers {version} transformers: their rotary modules\n\n\
         Generated by `tests/rope_axes/diffusers.rs` (`POSENC_WRITE_MATRIX=1 cargo test \
         --features hf-config --test rope_axes diffusers`) from \
         `tests/data/diffusers/rope_configs.json` (`rope_configs.py`: each class built by \
         diffusers, its rotary modules run on the CPU) and \
         `RotaryModule::from_diffusers_config`; do not edit. `read`: every rotary module of \
         the class read from its `config.json` and rotating as the module does at sampled \
         tokens; `refused`: a typed error that names the module and says why; `no rotary \
         module`: some of these rotate by a table their pipeline or a method builds \
         (HunyuanDiT, CogVideoX, ConsisID, Lumina-Next, Allegro, Stable Audio, JoyImage Edit, \
         Wan-Animate 2, ACE-Step), not read.\n\n\
         - {builds} builds; {rotating} hold a rotary module: {read} read, {refused} refused.\n\n\
         | class | rotary modules | status | what the crate rotates | reason |\n\
         |---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    let path = format!(
        "{}/tests/data/diffusers/ROPE.md",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("POSENC_WRITE_MATRIX").is_some() {
        std::fs::write(&path, &text).expect("write ROPE.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "tests/data/diffusers/ROPE.md is not the matrix the readers give: write it again with \
         POSENC_WRITE_MATRIX=1 cargo test --features hf-config --test rope_axes diffusers"
    );
}

/// A safetensors file of `tensors` (name, dtype, shape, raw little-endian bytes), as
/// `safetensors` lays one out.
fn safetensors(tensors: &[(&str, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let entry = serde_json::json!({"dtype": dtype, "shape": shape,
                                       "data_offsets": [data.len(), data.len() + bytes.len()]});
        header.insert(name.to_string(), entry);
        data.extend_from_slice(bytes);
    }
    let header = serde_json::to_vec(&Value::Object(header)).expect("json");
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.extend(data);
    out
}

/// Mochi's checkpoint reader: a BF16 table read exactly beside another tensor; the other
/// classes as their config reads; without the checkpoint a refusal that says what to pass;
/// a missing tensor, a wrong shape or dtype, a truncated or foreign file as typed errors.
#[test]
fn mochi_checkpoint_reader_reads_its_weights_and_refuses_bad_files() {
    use std::io::Cursor;
    use wgpu_posenc::LearnedFrequencies;
    let data = test_data("diffusers/rope_configs.json");
    let builds = &data["builds"];
    let mut config = builds["MochiTransformer3DModel"]["config"].clone();
    config["num_attention_heads"] = serde_json::json!(2);
    config["attention_head_dim"] = serde_json::json!(8);
    // 3 x 2 x 4 bf16 values, each exact: k / 64 - 0.2 rounded to bf16 by hand.
    let values: Vec<f32> = (0..24).map(|k| k as f32 / 64.0 - 0.25).collect();
    let bf16: Vec<u8> = values
        .iter()
        .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
        .collect();
    let other = ("proj_out.weight", "F32", vec![2], vec![0u8; 8]);
    let file = safetensors(&[
        other.clone(),
        ("pos_frequencies", "BF16", vec![3, 2, 4], bf16.clone()),
    ]);
    let modules =
        RotaryModule::from_diffusers_checkpoint(&config, &mut Cursor::new(&file)).expect("read");
    assert_eq!(modules.len(), 1);
    let widened: Vec<f64> = values.iter().map(|&v| f64::from(v)).collect();
    assert_eq!(
        modules[0].spec.learned,
        Some(LearnedFrequencies::new(3, 2, widened))
    );
    assert_eq!(
        (modules[0].path, modules[0].module, modules[0].head_dim),
        ("rope", "MochiRoPE", 8)
    );
    // Another class: its config's reading, the file not touched.
    let wan = &builds["WanTransformer3DModel"]["config"];
    let via =
        RotaryModule::from_diffusers_checkpoint(wan, &mut Cursor::new(&b""[..])).expect("wan");
    assert_eq!(via, RotaryModule::from_diffusers_config(wan).expect("wan"));
    // Without the checkpoint: a refusal naming the reader to use.
    let e = RotaryModule::from_diffusers_config(&config).expect_err("config only");
    assert!(e.to_string().contains("from_diffusers_checkpoint"), "{e}");
    let refused = |bytes: &[u8], needle: &str| {
        let e = RotaryModule::from_diffusers_checkpoint(&config, &mut Cursor::new(bytes))
            .expect_err("refused");
        assert!(matches!(e, Error::InvalidCheckpoint { .. }), "{e}");
        assert!(e.to_string().contains(needle), "{needle}: {e}");
    };
    refused(
        &safetensors(std::slice::from_ref(&other)),
        "no tensor pos_frequencies",
    );
    refused(
        &safetensors(&[("pos_frequencies", "BF16", vec![3, 4, 2], bf16.clone())]),
        "need [3, 2, 4]",
    );
    refused(
        &safetensors(&[("pos_frequencies", "I64", vec![3, 2, 4], vec![0; 192])]),
        "I64",
    );
    refused(
        &safetensors(&[(
            "pos_frequencies",
            "BF16",
            vec![3, 2, 4],
            bf16[..40].to_vec(),
        )]),
        "data_offsets",
    );
    refused(&file[..file.len() - 3], "reading");
    refused(b"not a safetensors file", "header");
    refused(
        &[4, 0, 0, 0, 0, 0, 0, 0, b'[', b']', b' ', b' '],
        "no tensor",
    );
}
