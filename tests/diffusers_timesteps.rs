//! The timestep projections of every diffusers transformer
//! (`tests/data/diffusers/timestep_configs.py`): read from each class's `config.json` (its
//! default one and that one with each key changed on its own) into the modules diffusers
//! builds from it, and each distinct projection through the crate against diffusers' own
//! module and the real number.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{ctx, max_error, test_data};
use serde_json::Value;
use wgpu_posenc::{HostPositions, Layout, SinusoidalLayout, SinusoidalSpec, Timescales};

const CONTRACT: f64 = 1.5e-7;

fn f(v: &Value) -> f64 {
    v.as_f64().expect("number")
}

/// The spec of a projection the data records.
fn spec_of(p: &Value) -> SinusoidalSpec {
    SinusoidalSpec::timesteps(
        p["dim"].as_u64().expect("dim"),
        p["flip_sin_to_cos"].as_bool().expect("flip"),
        f(&p["downscale_freq_shift"]),
    )
    .max_period(f(&p["max_period"]))
    .freq_scale(f(&p["scale"]))
}

#[test]
fn every_projection_against_diffusers_own_module() {
    let data = test_data("diffusers/timestep_configs.json");
    let mut modules = 0;
    for case in data["golden"].as_array().expect("golden") {
        let spec = spec_of(case);
        let factor = f(&case["time_factor"]) as f32;
        // The module's input: the timestep times its factor, in f32.
        let t: Vec<f32> = case["timesteps"]
            .as_array()
            .expect("timesteps")
            .iter()
            .map(|v| f(v) as f32 * factor)
            .collect();
        let d = spec.d_model as usize;
        let ours = ctx()
            .sinusoidal_table_at_host(
                &spec,
                Layout::rows(t.len() as u64, d as u64),
                HostPositions::float(&t),
            )
            .expect("table");
        let rows = |k: &str| -> Vec<Vec<f64>> {
            let row = |r: &Value| r.as_array().expect("row").iter().map(f).collect();
            case[k].as_array().expect(k).iter().map(row).collect()
        };
        let (exact, theirs) = (rows("exact"), rows("diffusers"));
        let mut worst = (0.0f64, 0.0f64);
        for (k, row) in ours.chunks(d).enumerate() {
            worst.0 = worst.0.max(max_error(row, &exact[k]));
            worst.1 = worst.1.max(max_error(row, &theirs[k]));
        }
        let own = f(&case["max_diffusers_error"]);
        let users = case["used_by"].as_array().expect("used_by").len();
        modules += users;
        let module = case["module"].as_str().expect("module");
        assert!(
            worst.0 <= CONTRACT,
            "{module} {spec:?}: {:e} from the real number",
            worst.0
        );
        assert!(
            worst.1 <= own + CONTRACT,
            "{module} {spec:?}: {:e} from diffusers (whose own error is {own:e})",
            worst.1
        );
        eprintln!(
            "{module}({d}, cos first {}, shift {}, scale {}, period {}, input x{factor}) in \
             {users} modules: GPU within {:.2e} of the real number, diffusers within {own:.2e}",
            case["flip_sin_to_cos"],
            case["downscale_freq_shift"],
            case["scale"],
            case["max_period"],
            worst.0
        );
    }
    let listed: usize = classes(&data)
        .values()
        .map(|c| {
            c["variants"][0]["projections"]
                .as_array()
                .expect("projections")
                .len()
        })
        .sum();
    assert_eq!(
        modules, listed,
        "every module of every default config is checked"
    );
}

fn classes(data: &Value) -> &serde_json::Map<String, Value> {
    data["classes"].as_object().expect("classes")
}

/// `(path, module, dim, flip, shift, scale, max period, factor)` of a recorded projection.
type Row = (String, String, u64, bool, f64, f64, f64, f64);

fn recorded(p: &Value) -> Row {
    let s = |k: &str| p[k].as_str().expect(k).to_string();
    let spec = spec_of(p);
    let (period, shift) = match spec.timescales {
        Some(Timescales::Shifted { max_period, shift }) => (max_period, shift),
        _ => unreachable!(),
    };
    let flip = spec.layout == SinusoidalLayout::ConcatenatedCosFirst;
    let factor = f(&p["time_factor"]);
    (
        s("path"),
        s("module"),
        spec.d_model,
        flip,
        shift,
        spec.freq_scale,
        period,
        factor,
    )
}

#[cfg(feature = "hf-config")]
fn read(config: &Value) -> wgpu_posenc::Result<Vec<Row>> {
    use wgpu_posenc::TimestepProjection;
    let got = TimestepProjection::from_diffusers_config(config)?;
    Ok(got
        .iter()
        .map(|p| {
            let (period, shift) = match p.spec.timescales {
                Some(Timescales::Shifted { max_period, shift }) => (max_period, shift),
                other => panic!("{other:?}"),
            };
            let flip = p.spec.layout == SinusoidalLayout::ConcatenatedCosFirst;
            let (d, s) = (p.spec.d_model, p.spec.freq_scale);
            let m = p.module.to_string();
            (
                p.path.clone(),
                m,
                d,
                flip,
                shift,
                s,
                period,
                f64::from(p.input_scale),
            )
        })
        .collect())
}

/// Every class's default config, and that config with each key changed on its own, reads
/// into the projections diffusers builds from it; the classes with none are the crate's list.
#[cfg(feature = "hf-config")]
#[test]
fn configs_read_into_the_modules_diffusers_builds() {
    use std::collections::BTreeSet;
    use wgpu_posenc::DIFFUSERS_WITHOUT_PROJECTION;
    let data = test_data("diffusers/timestep_configs.json");
    let (mut configs, mut with, mut all) = (0, BTreeSet::new(), BTreeSet::new());
    for (label, class) in classes(&data) {
        let base = class["config"].as_object().expect("config");
        let variants = class["variants"].as_array().expect("variants");
        let rows = |v: &Value| -> Vec<Row> {
            v["projections"]
                .as_array()
                .expect("projections")
                .iter()
                .map(recorded)
                .collect()
        };
        let default = rows(&variants[0]);
        for variant in variants {
            let mut config = base.clone();
            for (k, v) in variant["set"].as_object().expect("set") {
                config.insert(k.clone(), v.clone());
            }
            let want = match variant.get("same_as_default") {
                Some(_) => default.clone(),
                None => rows(variant),
            };
            let got = read(&Value::Object(config))
                .unwrap_or_else(|e| panic!("{label} with {}: {e}", variant["set"]));
            assert_eq!(got, want, "{label} with {}", variant["set"]);
            configs += 1;
            let name = base["_class_name"].as_str().expect("name");
            all.insert(name.to_string());
            if !want.is_empty() {
                with.insert(name.to_string());
            }
        }
    }
    let mut without: BTreeSet<String> = all.difference(&with).cloned().collect();
    without.extend(
        data["refused"]
            .as_object()
            .expect("refused")
            .keys()
            .cloned(),
    );
    let listed: BTreeSet<String> = DIFFUSERS_WITHOUT_PROJECTION
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(without, listed, "the classes without a projection");
    eprintln!(
        "{configs} configs of {} builds ({} classes with projections) read as diffusers builds them",
        classes(&data).len(),
        with.len()
    );
}

#[cfg(feature = "hf-config")]
#[test]
fn projection_configs_that_cannot_be_read_are_typed_errors() {
    use serde_json::json;
    use wgpu_posenc::{Error, FrequencyError, TimestepProjection};
    let data = test_data("diffusers/timestep_configs.json");
    let config = |name: &str| classes(&data)[name]["config"].clone();
    let with = |name: &str, key: &str, v: Value| {
        let mut c = config(name);
        c[key] = v;
        c
    };
    let cases = [
        (
            with("WanTransformer3DModel", "freq_dim", json!(-3)),
            "freq_dim",
        ),
        (
            with("WanTransformer3DModel", "freq_dim", json!(1)),
            "d_model",
        ),
        (
            with(
                "CogVideoXTransformer3DModel",
                "num_attention_heads",
                json!(null),
            ),
            "num_attention_heads",
        ),
        (
            with("BriaTransformer2DModel", "time_theta", json!(0)),
            "time_theta",
        ),
        (
            with("BriaTransformer2DModel", "time_theta", json!("ten")),
            "time_theta",
        ),
        (
            with("EasyAnimateTransformer3DModel", "freq_shift", json!("x")),
            "freq_shift",
        ),
        (
            with("EasyAnimateTransformer3DModel", "flip_sin_to_cos", json!(1)),
            "flip_sin_to_cos",
        ),
        (
            with("DiTTransformer2DModel", "num_layers", json!(u64::MAX)),
            "num_layers",
        ),
        (
            with("LatteTransformer3DModel#0", "norm_type", json!(3)),
            "norm_type",
        ),
        (
            with(
                "FluxTransformer2DModel",
                "_class_name",
                json!("NotADiffusersModel"),
            ),
            "_class_name",
        ),
        (
            json!({"_class_name": "Transformer2DModel", "norm_type": "layer_norm"}),
            "norm_type",
        ),
    ];
    for (config, key) in cases {
        let e = TimestepProjection::from_diffusers_config(&config).expect_err(key);
        let ok = match &e {
            Error::Frequency(FrequencyError::InvalidConfigValue { key: k, .. }) => k == key,
            Error::InvalidDModel { .. } => key == "d_model",
            _ => false,
        };
        assert!(ok, "{key}: {e:?}");
    }
    let e = TimestepProjection::from_diffusers_config(&json!(7)).expect_err("number");
    assert!(
        matches!(e, Error::Frequency(FrequencyError::ConfigNotObject { .. })),
        "{e}"
    );
}

/// Every key of every class's config set to values of the wrong kind or range: each reader
/// returns a reading whose specs are valid or a typed error, never a panic.
#[cfg(feature = "hf-config")]
#[test]
fn every_key_set_to_bad_values_reads_or_is_refused() {
    use serde_json::json;
    use wgpu_posenc::{SincosGrid, TimestepProjection};
    let data = test_data("diffusers/timestep_configs.json");
    let bad = [
        json!(null),
        json!(-1),
        json!(0),
        json!(1),
        json!(2.5),
        json!(1e308),
        json!(u64::MAX),
        json!("x"),
        json!(true),
        json!([1, 2]),
        json!({}),
    ];
    let (mut read, mut refused) = (0, 0);
    for (label, class) in classes(&data) {
        let base = class["config"].as_object().expect("config");
        for key in base.keys().filter(|k| *k != "_class_name") {
            for v in &bad {
                let mut config = base.clone();
                config.insert(key.clone(), v.clone());
                let config = Value::Object(config);
                match TimestepProjection::from_diffusers_config(&config) {
                    Ok(ps) => {
                        for p in ps {
                            p.spec
                                .validate()
                                .unwrap_or_else(|e| panic!("{label}.{key}: {e}"));
                        }
                        read += 1;
                    }
                    Err(_) => refused += 1,
                }
                for latent in [None, Some(&[64u64, 48][..]), Some(&[4, 30, 44][..])] {
                    if let Ok(Some(grid)) = SincosGrid::from_diffusers_config(&config, latent) {
                        grid.validate()
                            .unwrap_or_else(|e| panic!("{label}.{key}: {e}"));
                    }
                }
            }
        }
    }
    eprintln!("{read} configs read, {refused} refused with a typed error");
    assert!(read > 0 && refused > 0);
}
