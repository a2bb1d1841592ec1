//! Random `config.json` values through `HfRope::from_config` (and `RopeSpec::from_hf_config`,
//! `Scaling::from_hf_config`, and `angle_words` of each layer's spec): the committed fixtures
//! and every family's default config; and diffusers transformer configs (every class's
//! default config, `timestep_configs.json`) through `TimestepProjection::from_diffusers_config`,
//! `SincosGrid::from_diffusers_config` at random latents and `RotaryModule::
//! from_diffusers_config`, and transformers vision configs (`vision_rope.json`) through
//! `RotaryModule::from_hf_vision_config`; with keys removed or set to values of the wrong type,
//! zero, negative, fractional, huge (up to `u64::MAX` and `±f64::MAX`; NaN and infinities
//! are not JSON, and serde_json refuses numbers past f64 before the crate sees them), or
//! another family's `model_type`. Each config is read or refused; a panic is a failure.
//!
//! An abort (an allocation the process cannot make) would end the test binary, so the
//! configs are read in a child process (this test's own binary, run again with
//! `POSENC_CONFIG_CHILD` set) that notes each config's index before reading it: after an
//! abort the parent records that config and starts a new child after it, so one abort does
//! not hide the others.

use std::io::BufRead;
use std::process::{Command, Stdio};

use serde_json::{Map, Value, json};
use wgpu_posenc::{HfRope, RopeSpec, RotaryModule, Scaling, SincosGrid, TimestepProjection};

use super::common::Rng;

/// Configs read per run.
const CONFIGS: usize = 3000;

/// Keys of the top level (or the text config) that transformers reads for RoPE.
const TOP_KEYS: [&str; 31] = [
    "model_type",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "partial_rotary_factor",
    "head_dim",
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "n_layer",
    "n_embd",
    "n_head",
    "max_position_embeddings",
    "original_max_position_embeddings",
    "rotary_emb_base",
    "rotary_pct",
    "rotary_dim",
    "qk_rope_head_dim",
    "rope_interleave",
    "no_rope_layers",
    "no_rope_layer_interval",
    "rope_local_base_freq",
    "global_head_dim",
    "layer_types",
    "sliding_window_pattern",
    "rms_norm_eps",
    "text_config",
    "sliding_window",
    "block_types",
    "per_layer_config",
    "cross_attention_layers",
];

/// Keys of a rope parameter dict.
const DICT_KEYS: [&str; 17] = [
    "rope_type",
    "type",
    "factor",
    "original_max_position_embeddings",
    "low_freq_factor",
    "high_freq_factor",
    "beta_fast",
    "beta_slow",
    "mscale",
    "mscale_all_dim",
    "attention_factor",
    "truncate",
    "short_factor",
    "long_factor",
    "mrope_section",
    "rope_theta",
    "partial_rotary_factor",
];

/// Keys of a vision tower's or encoder's config that the encoder readers read beside the
/// text ones: timm's PE ViT in a `TimmWrapper` config, V-JEPA 2's predictor, the towers'
/// widths and heads.
const VISION_KEYS: [&str; 8] = [
    "architecture",
    "model_args",
    "embed_dim",
    "num_heads",
    "pred_hidden_size",
    "pred_num_attention_heads",
    "vision_config",
    "video_config",
];

/// Keys of timm's `model_args` (the ones the PE reader reads, one that changes the grid
/// only, and one it refuses).
const MODEL_ARGS: [&str; 5] = [
    "embed_dim",
    "num_heads",
    "rope_temperature",
    "img_size",
    "rope_type",
];

const MODEL_TYPES: [&str; 12] = [
    "llama",
    "qwen3",
    "llama4_text",
    "qwen2_vl",
    "qwen3_vl_moe_text",
    "phi3",
    "gpt_neox",
    "gptj",
    "deepseek_v3",
    "gemma3_text",
    "gemma4_text",
    "no_such_family",
];

const ROPE_TYPES: [&str; 10] = [
    "default",
    "linear",
    "dynamic",
    "yarn",
    "llama3",
    "longrope",
    "su",
    "proportional",
    "mrope",
    "no_such_type",
];

fn data_dir() -> String {
    format!("{}/tests/data/hf", env!("CARGO_MANIFEST_DIR"))
}

/// The fixtures as published, and every family's default config as transformers saves it
/// (`family_defaults.json`, and the default configs of every family `rope_families.py`
/// ran).
fn bases() -> Vec<Value> {
    let mut out = Vec::new();
    let dir = format!("{}/configs", data_dir());
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("configs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let text = std::fs::read_to_string(&p).expect("fixture");
        out.push(serde_json::from_str(&text).expect("fixture json"));
    }
    let text = std::fs::read_to_string(format!("{}/family_defaults.json", data_dir()))
        .expect("family_defaults.json");
    let d: Value = serde_json::from_str(&text).expect("family defaults");
    for (_, f) in d["families"].as_object().expect("families") {
        out.push(f["config"].clone());
    }
    let text = std::fs::read_to_string(format!("{}/rope_families_configs.json", data_dir()))
        .expect("rope_families_configs.json");
    let d: Value = serde_json::from_str(&text).expect("family configs");
    out.extend(d.as_object().expect("configs").values().cloned());
    let text = std::fs::read_to_string(format!("{}/vision_rope.json", data_dir()))
        .expect("vision_rope.json");
    let d: Value = serde_json::from_str(&text).expect("vision configs");
    for f in d["families"].as_array().expect("families") {
        out.push(f["config"].clone());
    }
    let path = format!("{}/../diffusers/timestep_configs.json", data_dir());
    let text = std::fs::read_to_string(path).expect("timestep_configs.json");
    let d: Value = serde_json::from_str(&text).expect("diffusers configs");
    for (_, c) in d["classes"].as_object().expect("classes") {
        out.push(c["config"].clone());
    }
    out
}

/// A value of any JSON type, often one a config never holds.
fn value(rng: &mut Rng) -> Value {
    let pick = |rng: &mut Rng, n: usize| rng.range(0, n as u64) as usize;
    match pick(rng, 30) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!("x"),
        3 => json!([]),
        4 => json!({}),
        5 => json!([1, 2]),
        6 => json!(0),
        7 => json!(-1),
        8 => json!(-1e308),
        9 => json!(f64::MAX),
        10 => json!(-f64::MAX),
        11 => json!(1.5),
        12 => json!((1u64 << 53) + 1),
        13 => json!(u64::MAX),
        14 => json!(1u64 << 40),
        15 => json!(1u64 << 62),
        16 => json!(4096),
        17 => json!(0.25),
        18 => json!(1e-300),
        19 => json!(i64::MIN),
        20 => json!(ROPE_TYPES[pick(rng, ROPE_TYPES.len())]),
        21 => json!({"rope_type": ROPE_TYPES[pick(rng, ROPE_TYPES.len())], "factor": null}),
        22 => json!(["full_attention", "chunked_attention", "linear_attention"]),
        23 => json!(vec![rng.range(0, 3); rng.range(0, 70) as usize]),
        24 => json!([1u64 << 40, 0, 0]),
        25 => json!(MODEL_TYPES[pick(rng, MODEL_TYPES.len())]),
        26 => json!(rng.range(0, 1 << 20)),
        27 => json!(vec![1.0; rng.range(0, 300) as usize]),
        28 => json!({"full_attention": {"rope_type": "yarn"}, "sliding_attention": null}),
        _ => json!(rng.range(0, 100) as f64 / 7.0),
    }
}

/// The object a mutation goes into: the top level, the text config (or an encoder-decoder's
/// decoder), or a rope dict.
fn target<'a>(config: &'a mut Value, rng: &mut Rng) -> Option<&'a mut Map<String, Value>> {
    let which = rng.range(0, 5);
    let top = config.as_object_mut()?;
    match which {
        0 | 1 => Some(top),
        // The language model's or the vision tower's sub-config, under whichever name the
        // file has it.
        // (PE Video's timm tower one level further down, in `video_config.vision_config`).
        2 => {
            let subs = [
                "text_config",
                "decoder",
                "decoder_config",
                "vision_config",
                "video_config",
                "audio_video_config",
            ];
            let present: Vec<&str> = subs
                .into_iter()
                .filter(|k| top.get(*k).is_some_and(Value::is_object))
                .collect();
            let key = *present.get(rng.range(0, present.len().max(1) as u64) as usize)?;
            let sub = top.get_mut(key)?.as_object_mut()?;
            let deeper =
                rng.range(0, 2) == 0 && sub.get("vision_config").is_some_and(Value::is_object);
            match deeper {
                true => sub.get_mut("vision_config")?.as_object_mut(),
                false => Some(sub),
            }
        }
        _ => {
            let key = if which == 3 {
                "rope_scaling"
            } else {
                "rope_parameters"
            };
            let dict = top.entry(key).or_insert_with(|| json!({}));
            if !dict.is_object() {
                *dict = json!({});
            }
            dict.as_object_mut()
        }
    }
}

/// Config `i`: a base with one to four keys removed or changed.
fn config(bases: &[Value], i: usize) -> Value {
    let mut rng = Rng::new(0xc0f1_9000 + i as u64);
    let mut config = bases[rng.range(0, bases.len() as u64) as usize].clone();
    if config.get("_class_name").is_some() {
        diffusers_mutations(&mut config, &mut rng);
        return config;
    }
    for _ in 0..rng.range(1, 5) {
        let kind = rng.range(0, 6);
        let key = match kind {
            0 | 1 => DICT_KEYS[rng.range(0, DICT_KEYS.len() as u64) as usize],
            2 => VISION_KEYS[rng.range(0, VISION_KEYS.len() as u64) as usize],
            _ => TOP_KEYS[rng.range(0, TOP_KEYS.len() as u64) as usize],
        };
        let remove = rng.range(0, 4) == 0;
        let mut v = value(&mut rng);
        if key == "model_args" && rng.range(0, 2) == 0 {
            let arg = MODEL_ARGS[rng.range(0, MODEL_ARGS.len() as u64) as usize];
            v = json!({ arg: value(&mut rng) });
        }
        if let Some(map) = target(&mut config, &mut rng) {
            if remove {
                map.remove(key);
            } else {
                map.insert(key.to_string(), v);
            }
        }
    }
    config
}

/// One to four of a diffusers config's own keys (or its class) removed or changed.
fn diffusers_mutations(config: &mut Value, rng: &mut Rng) {
    let Some(map) = config.as_object_mut() else {
        return;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    for _ in 0..rng.range(1, 5) {
        let key = &keys[rng.range(0, keys.len() as u64) as usize];
        match rng.range(0, 6) {
            0 => {
                map.remove(key);
            }
            // Another class's name on this class's keys.
            1 => {
                let class = [
                    "FluxTransformer2DModel",
                    "Transformer2DModel",
                    "SD3Transformer2DModel",
                    "CogVideoXTransformer3DModel",
                    "DiTTransformer2DModel",
                    "NotAModel",
                ];
                map.insert("_class_name".into(), json!(class[rng.range(0, 6) as usize]));
            }
            _ => {
                map.insert(key.clone(), value(rng));
            }
        }
    }
}

/// A diffusers config through both readers; `Err` names what broke an invariant.
fn read_diffusers(config: &Value, rng: &mut Rng) -> Result<bool, String> {
    let steps = TimestepProjection::from_diffusers_config(config);
    if let Ok(steps) = &steps {
        for p in steps {
            p.spec.validate().map_err(|e| format!("{}: {e}", p.path))?;
        }
    }
    let latents: [&[u64]; 4] = [&[64, 48], &[3, 60, 90], &[0, 0], &[u64::MAX, 2]];
    let latent = match rng.range(0, 5) {
        4 => None,
        k => Some(latents[k as usize]),
    };
    let grid = SincosGrid::from_diffusers_config(config, latent);
    if let Ok(Some(g)) = &grid {
        g.validate().map_err(|e| format!("grid: {e}"))?;
    }
    // A rotary module read is one the spec's own checks accept at its head.
    let rope = RotaryModule::from_diffusers_config(config);
    for r in rope.iter().flatten() {
        let _ = r.spec.angle_words(r.head_dim, 4096);
        if r.spec.rotary_dim.unwrap_or(r.head_dim) > r.head_dim {
            return Err(format!(
                "{}: rotates past head_dim {}",
                r.module, r.head_dim
            ));
        }
    }
    let rotates = rope.is_ok_and(|r| !r.is_empty());
    Ok(steps.is_ok() || matches!(grid, Ok(Some(_))) || rotates)
}

/// Reads one config through every entry point; `Err` names what broke an invariant.
fn read(config: &Value) -> Result<bool, String> {
    if config.get("_class_name").is_some() {
        return read_diffusers(config, &mut Rng::new(config.to_string().len() as u64));
    }
    let _ = Scaling::from_hf_config(config);
    // A vision tower read is a spec its own checks take.
    let towers = RotaryModule::from_hf_vision_config(config).unwrap_or_default();
    for t in &towers {
        if let Err(e) = t.spec.angle_words(t.head_dim, 4096) {
            return Err(format!("{} read, then refused: {e}", t.module));
        }
    }
    let Ok(rope) = HfRope::from_config(config) else {
        return Ok(!towers.is_empty());
    };
    if rope.layers.len() as u64 > HfRope::MAX_LAYERS {
        return Err(format!("{} layers", rope.layers.len()));
    }
    if let Some(&t) = rope.layers.iter().find(|&&t| t >= rope.layer_types.len()) {
        return Err(format!("layer type {t} of {}", rope.layer_types.len()));
    }
    // What hf_spec prints of it: no panic whatever was read.
    let _ = rope.to_string();
    for (_, layer) in &rope.layer_types {
        if let Some(layer) = layer {
            // HF's output lane of every lane is a lane of the head.
            if let Some(l) =
                (0..layer.head_dim.min(1 << 12)).find(|&l| layer.hf_lane(l) >= layer.head_dim)
            {
                return Err(format!("hf_lane({l}) past head_dim {}", layer.head_dim));
            }
            // Whatever the reader accepted, the spec's own checks decide: no panic.
            let _ = layer.spec.angle_words(layer.head_dim, 4096);
            let _ = RopeSpec::from_hf_config(config, layer.head_dim);
        }
    }
    let _ = rope.only();
    Ok(true)
}

/// The child: reads configs from `start` on, noting each index before it reads it.
fn child(start: usize, progress: &str) {
    let bases = bases();
    let (mut ok, mut refused) = (0, 0);
    for i in start..CONFIGS {
        std::fs::write(progress, i.to_string()).expect("progress file");
        let config = config(&bases, i);
        match std::panic::catch_unwind(|| read(&config)) {
            Ok(Ok(true)) => ok += 1,
            Ok(Ok(false)) => refused += 1,
            Ok(Err(e)) => println!("FAIL {i}: {e}"),
            Err(_) => println!("FAIL {i}: panicked"),
        }
    }
    println!("DONE {ok} read, {refused} refused");
}

#[test]
fn random_configs_are_read_or_refused() {
    if let Ok(start) = std::env::var("POSENC_CONFIG_CHILD") {
        let progress = std::env::var("POSENC_CONFIG_PROGRESS").expect("progress path");
        child(start.parse().expect("start"), &progress);
        return;
    }
    let progress = std::env::temp_dir().join(format!("posenc-configs-{}", std::process::id()));
    let progress = progress.to_str().expect("path").to_string();
    let bases = bases();
    let mut failures = Vec::new();
    let mut start = 0;
    let mut done = None;
    while done.is_none() && start < CONFIGS {
        let out = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "configs::random_configs_are_read_or_refused",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("POSENC_CONFIG_CHILD", start.to_string())
            .env("POSENC_CONFIG_PROGRESS", &progress)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .output()
            .expect("child process");
        // (The harness may print the test's name on the line of its first output.)
        for line in out.stdout.lines().map_while(Result::ok) {
            let marked = |m: &str| line.find(m).map(|at| line[at + m.len()..].to_string());
            if let Some(rest) = marked("FAIL ") {
                let line = format!("FAIL {rest}");
                let at: usize = rest
                    .split(':')
                    .next()
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(0);
                failures.push(format!("{line}: {}", config(&bases, at)));
            } else if let Some(summary) = marked("DONE ") {
                done = Some(summary);
            }
        }
        if done.is_none() {
            // The child died (an abort): the config it was reading is a failure.
            let at: usize = std::fs::read_to_string(&progress)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(start);
            failures.push(format!(
                "ABORT {at} ({}): {}",
                out.status,
                config(&bases, at)
            ));
            start = at + 1;
        }
    }
    let _ = std::fs::remove_file(&progress);
    eprintln!(
        "{CONFIGS} random configs: {}",
        done.as_deref().unwrap_or("ended by aborts")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
