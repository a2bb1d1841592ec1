//! Whisper's encoder positions: transformers' `sinusoids(1500, d_model)` (the tensor2tensor
//! form, `[sin | cos]` with timescales from 1 to 10 000) as `WhisperModel` fills
//! `embed_positions`, against the sinusoidal table of `SinusoidalSpec::timescales(1, 10000)`,
//! concatenated (committed output of `tests/data/hf/whisper_sinusoids.py`, with mpmath's
//! real-number rows).
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{ctx, hf_data, max_error};
use wgpu_posenc::{SinusoidalLayout, SinusoidalSpec};

#[test]
fn whisper_encoder_positions_are_the_tensor2tensor_table() {
    let data = hf_data("whisper_sinusoids.json");
    for case in data["cases"].as_array().expect("cases") {
        let d = case["d_model"].as_u64().expect("d_model");
        let n = case["positions"].as_u64().expect("positions");
        let spec = SinusoidalSpec::new(d)
            .timescales(1.0, 10_000.0)
            .layout(SinusoidalLayout::Concatenated);
        let table = ctx().sinusoidal_table_host(&spec, n, 0).expect("table");
        let (mut exact_err, mut apart) = (0.0f64, 0.0f64);
        let rows = case["rows"].as_array().expect("rows");
        for (k, r) in rows.iter().enumerate() {
            let r = r.as_u64().expect("row") as usize;
            let row = &table[r * d as usize..(r + 1) * d as usize];
            let values = |key: &str| -> Vec<f64> {
                case[key][k]
                    .as_array()
                    .expect("row values")
                    .iter()
                    .map(|v| v.as_f64().expect("number"))
                    .collect()
            };
            let theirs: Vec<f64> = values("transformers")
                .iter()
                .map(|&v| f64::from(v as f32))
                .collect();
            exact_err = exact_err.max(max_error(row, &values("exact")));
            apart = apart.max(max_error(row, &theirs));
        }
        let theirs_err = case["max_transformers_error"].as_f64().expect("error");
        assert!(
            exact_err <= 1.5e-7,
            "d {d}: {exact_err:e} from the real number"
        );
        assert!(
            apart <= theirs_err + 1.5e-7,
            "d {d}: {apart:e} from transformers"
        );
        eprintln!(
            "d_model {d}: GPU within {exact_err:.2e} of the real number and {apart:.2e} of \
             transformers (whose f32 table is off by {theirs_err:.2e})"
        );
    }
}
