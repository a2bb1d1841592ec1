//! Every diffusers transformer's sinusoids (`tests/data/diffusers/transformers_matrix.py`:
//! each class built on its default config, its `Timesteps` modules and sin-cos patch tables
//! read from its own modules; listed in `tests/data/diffusers/TRANSFORMERS.md`): each
//! parameter set through the crate, against diffusers' own output and the real number.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{ctx, max_error, test_data};
use serde_json::Value;
use wgpu_posenc::{GridBlock, HostPositions, Layout, SincosGrid, SinusoidalSpec};

const CONTRACT: f64 = 1.5e-7;

fn u(v: &Value) -> u64 {
    v.as_u64().expect("integer")
}

fn f(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

fn rows(v: &Value) -> Vec<Vec<f64>> {
    let row = |r: &Value| r.as_array().expect("row").iter().map(f).collect();
    v.as_array().expect("rows").iter().map(row).collect()
}

/// `(GPU from the real number, GPU from diffusers)` over the rows given.
fn errors(ours: &[f32], d: usize, picked: &[usize], case: &Value) -> (f64, f64) {
    let (exact, theirs) = (rows(&case["exact"]), rows(&case["diffusers"]));
    let mut worst = (0.0f64, 0.0f64);
    for (k, &r) in picked.iter().enumerate() {
        let row = &ours[r * d..(r + 1) * d];
        let theirs: Vec<f64> = theirs[k].iter().map(|&v| f64::from(v as f32)).collect();
        worst.0 = worst.0.max(max_error(row, &exact[k]));
        worst.1 = worst.1.max(max_error(row, &theirs));
    }
    worst
}

#[test]
fn every_timestep_projection_of_every_diffusers_transformer() {
    let data = test_data("diffusers/transformers_matrix.json");
    let mut modules = 0;
    for case in data["timesteps"].as_array().expect("timesteps") {
        let dim = u(&case["dim"]);
        let spec = SinusoidalSpec::timesteps(
            dim,
            case["flip_sin_to_cos"].as_bool().expect("flip"),
            f(&case["downscale_freq_shift"]),
        )
        .freq_scale(f(&case["scale"]));
        let t: Vec<f32> = case["timesteps"]
            .as_array()
            .expect("timesteps")
            .iter()
            .map(|v| f(v) as f32)
            .collect();
        let layout = Layout::rows(t.len() as u64, dim);
        let ours = ctx()
            .sinusoidal_table_at_host(&spec, layout, HostPositions::float(&t))
            .expect("table");
        let picked: Vec<usize> = (0..t.len()).collect();
        let (exact, apart) = errors(&ours, dim as usize, &picked, case);
        let theirs = f(&case["max_diffusers_error"]);
        let users = case["used_by"].as_array().expect("used_by").len();
        modules += users;
        assert!(
            exact <= CONTRACT,
            "{spec:?}: {exact:e} from the real number"
        );
        assert!(
            apart <= theirs + CONTRACT,
            "{spec:?}: {apart:e} from diffusers ({theirs:e})"
        );
        eprintln!(
            "Timesteps({dim}, {}, {}, {}) in {users} modules: GPU within {exact:.2e} of the real \
             number, diffusers (f32) within {theirs:.2e}",
            case["flip_sin_to_cos"], case["downscale_freq_shift"], case["scale"]
        );
    }
    // Every module the matrix lists is one of the parameter sets checked.
    let listed = listed(&data, "timesteps");
    assert_eq!(modules, listed);
    eprintln!("{modules} Timesteps modules checked");
}

/// How many entries of `key` (modules or tables) the matrix lists over every class.
fn listed(data: &Value, key: &str) -> usize {
    let classes = data["classes"].as_object().expect("classes");
    classes
        .values()
        .filter_map(|c| c[key].as_array())
        .map(Vec::len)
        .sum()
}

/// The grid of a table the matrix recorded, as the module builds it.
fn grid_of(t: &Value) -> SincosGrid {
    let dim = u(&t["embed_dim"]);
    match t["kind"].as_str().expect("kind") {
        "temporal" => {
            let coords = (0..u(&t["length"])).map(|i| i as f32).collect();
            return SincosGrid {
                dim,
                zero_rows: 0,
                blocks: vec![GridBlock::concatenated(0, dim, coords)],
            };
        }
        "top_left" => {
            let side = u(&t["side"]);
            return SincosGrid::diffusers_top_left(dim, side, [side, side]).expect("grid");
        }
        "center" => {
            let side = u(&t["side"]);
            let (base, scale) = (f(&t["base_size"]), f(&t["interpolation_scale"]));
            return SincosGrid::diffusers_cropped(dim, side, [side, side], base, scale)
                .expect("grid");
        }
        _ => {}
    }
    if t["kind"] == "patch" {
        let side = u(&t["side"]);
        return SincosGrid::diffusers_2d(
            dim,
            [side, side],
            f(&t["base_size"]),
            f(&t["interpolation_scale"]),
        )
        .expect("grid");
    }
    let (p, c) = (u(&t["patch_size"]), u(&t["temporal_compression_ratio"]));
    let frames = (u(&t["sample_frames"]) - 1) / c + 1;
    let [h, w] = [u(&t["sample_height"]) / p, u(&t["sample_width"]) / p];
    SincosGrid::diffusers_3d(
        dim,
        [frames, h, w],
        f(&t["spatial_interpolation_scale"]),
        f(&t["temporal_interpolation_scale"]),
    )
    .expect("grid")
    .zero_rows(u(&t["max_text_seq_length"]))
}

#[test]
fn every_sincos_patch_table_of_every_diffusers_transformer() {
    let data = test_data("diffusers/transformers_matrix.json");
    let mut tables = 0;
    for t in data["tables"].as_array().expect("tables") {
        let grid = grid_of(t);
        let ours = ctx().sincos_grid_host(&grid).expect("table");
        let picked: Vec<usize> = t["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| u(r) as usize)
            .collect();
        let (exact, apart) = errors(&ours, grid.dim as usize, &picked, t);
        let theirs = f(&t["max_diffusers_error"]);
        let users: Vec<&str> = t["used_by"]
            .as_array()
            .expect("used_by")
            .iter()
            .map(|v| v.as_str().expect("name"))
            .collect();
        tables += users.len();
        assert!(
            exact <= CONTRACT,
            "{users:?}: {exact:e} from the real number"
        );
        assert!(
            apart <= theirs + CONTRACT,
            "{users:?}: {apart:e} from diffusers"
        );
        eprintln!(
            "{users:?} ({} rows): GPU within {exact:.2e} of the real number, {apart:.2e} of \
             diffusers (whose own error is {theirs:.2e})",
            grid.rows()
        );
    }
    let listed = listed(&data, "tables");
    assert_eq!(tables, listed);
    eprintln!("{tables} sin-cos tables checked");
}

/// Each transformer's default `config.json` (as `save_pretrained` writes it) read into the
/// grid of the table its module holds; the classes without a table are the crate's list.
#[cfg(feature = "hf-config")]
#[test]
fn configs_read_into_the_tables_the_modules_hold() {
    use wgpu_posenc::DIFFUSERS_WITHOUT_TABLE;
    let data = test_data("diffusers/transformers_matrix.json");
    let tables = data["tables"].as_array().expect("tables");
    let mut without = Vec::new();
    for (name, class) in data["classes"].as_object().expect("classes") {
        if class.get("error").is_some() {
            continue;
        }
        let config = &class["config"];
        if class["other_tables"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            // A table the crate does not read yet: refused, never a silent `None`.
            let c = serde_json::json!({ "_class_name": name });
            assert!(
                SincosGrid::from_diffusers_config(&c, None).is_err(),
                "{name}"
            );
            continue;
        }
        let Some(refs) = class["tables"].as_array().filter(|t| !t.is_empty()) else {
            // A build's label: the class, `#n` after it where it is built twice.
            without.push(name.split('#').next().expect("class"));
            if config.is_object() {
                let read = SincosGrid::from_diffusers_config(config, None);
                assert_eq!(read.expect(name), None, "{name}");
            }
            continue;
        };
        let table = tables
            .iter()
            .find(|t| t["key"] == refs[0]["key"])
            .expect("the class's table");
        // SD3's, CogView3Plus' and OmniGen's modules hold the whole `pos_embed_max_size`
        // table: a latent that size.
        let side = config["pos_embed_max_size"]
            .as_u64()
            .map(|m| m * u(&config["patch_size"]));
        let latent = side.map(|s| [s, s]);
        let grid = SincosGrid::from_diffusers_config(config, latent.as_ref().map(|l| &l[..]))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: no table read"));
        assert_eq!(grid, grid_of(table), "{name}");
    }
    without.sort_unstable();
    without.dedup();
    let mut listed = DIFFUSERS_WITHOUT_TABLE.to_vec();
    listed.sort_unstable();
    assert_eq!(without, listed, "the classes without a sin-cos table");
}

#[cfg(feature = "hf-config")]
#[test]
fn configs_that_cannot_be_read_are_typed_errors() {
    use serde_json::json;
    use wgpu_posenc::{Error, FrequencyError};
    let data = test_data("diffusers/transformers_matrix.json");
    let sd3 = &data["classes"]["SD3Transformer2DModel"]["config"];
    let mut missing = sd3.clone();
    missing
        .as_object_mut()
        .expect("object")
        .remove("patch_size");
    let mut unknown = sd3.clone();
    unknown["_class_name"] = json!("NotADiffusersModel");
    let cases: [(&Value, Option<&[u64]>, &str); 5] = [
        (&missing, None, "patch_size"),
        (&unknown, None, "_class_name"),
        (sd3, Some(&[0, 64]), "latent height"),
        // 98 patches a side: past the 96 of the table.
        (sd3, Some(&[196, 64]), "pos_embed_max_size"),
        (sd3, Some(&[64]), "latent"),
    ];
    for (config, latent, key) in cases {
        let e = SincosGrid::from_diffusers_config(config, latent).expect_err(key);
        let ok = matches!(&e, Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) if k == key);
        assert!(ok, "{key}: {e}");
    }
    // Latents (or an SD3 table) past 2^24 tokens: an error, not an allocation that aborts.
    let classes = &data["classes"];
    let mut huge_max = sd3.clone();
    huge_max["pos_embed_max_size"] = json!(u64::MAX);
    let dit = &classes["DiTTransformer2DModel"]["config"];
    let cog = &classes["CogVideoXTransformer3DModel"]["config"];
    let pixart = &classes["PixArtTransformer2DModel"]["config"];
    for (config, latent, key) in [
        (dit, vec![u64::MAX, u64::MAX], "latent"),
        (pixart, vec![1 << 14, 1 << 14], "latent"),
        (cog, vec![u64::MAX, 60, 90], "latent"),
        (&huge_max, vec![128, 128], "pos_embed_max_size"),
    ] {
        let e = SincosGrid::from_diffusers_config(config, Some(&latent)).expect_err(key);
        let ok = matches!(&e, Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) if k == key);
        assert!(ok, "{key}: {e}");
    }
    let e = SincosGrid::from_diffusers_config(&json!([1, 2]), None).expect_err("array");
    assert!(
        matches!(e, Error::Frequency(FrequencyError::ConfigNotObject { .. })),
        "{e}"
    );
    // CogView3Plus' and OmniGen's tables are built at `pos_embed_max_size` a side: a latent
    // past it is refused; a legacy `Transformer2DModel` that is neither DiT nor PixArt too.
    let cogview = &classes["CogView3PlusTransformer2DModel"]["config"];
    let omnigen = &classes["OmniGenTransformer2DModel"]["config"];
    let legacy = json!({"_class_name": "Transformer2DModel", "norm_type": "layer_norm"});
    for (config, latent, key) in [
        (cogview, Some(vec![258, 64]), "pos_embed_max_size"),
        (omnigen, Some(vec![64, 386]), "pos_embed_max_size"),
        (omnigen, Some(vec![64]), "latent"),
        (&legacy, None, "norm_type"),
    ] {
        let e = SincosGrid::from_diffusers_config(config, latent.as_deref()).expect_err(key);
        let ok = matches!(&e, Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) if k == key);
        assert!(ok, "{key}: {e}");
    }
    // FLUX rotates: no table, not an error.
    let flux = json!({"_class_name": "FluxTransformer2DModel"});
    assert_eq!(
        SincosGrid::from_diffusers_config(&flux, None).expect("flux"),
        None
    );
}
