//! A Qwen3-style attention layer in burn with wgpu-posenc's fused QK-norm + RoPE + KV-cache
//! write as its preprocessing stage (`tests/layer/mod.rs`), run on HF transformers' golden
//! weights and inputs (`tests/data/qwen3_attention.json`): a prefill of 16 tokens, then 4
//! decode steps, each output compared with HF's own `Qwen3Attention`.
//!
//! `cargo run --release -p wgpu-posenc-burn --example attention`

#[path = "../tests/layer/mod.rs"]
mod layer;

use std::time::Instant;

use burn::tensor::{Tensor, TensorData};
use wgpu_posenc_burn::BurnPosEnc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bridge = BurnPosEnc::init()?;
    let info = bridge.posenc().device().adapter_info();
    println!("adapter: {} ({:?})", info.name, info.backend);
    let golden = layer::golden();
    let hidden_size = golden["hidden_size"].as_u64().ok_or("hidden_size")? as usize;
    let mut attention = layer::Attention::from_golden(&bridge, &golden, 32)?;
    for (i, step) in golden["steps"]
        .as_array()
        .ok_or("steps")?
        .iter()
        .enumerate()
    {
        let hidden = layer::f32s(&step["hidden"]);
        let tokens = hidden.len() / hidden_size;
        let input = Tensor::<3>::from_data(
            TensorData::new(hidden, [1, tokens, hidden_size]),
            bridge.device(),
        );
        let t = Instant::now();
        let out = attention.forward(&bridge, input)?;
        let got = out
            .into_data()
            .try_to_vec::<f32>()
            .map_err(|e| format!("{e:?}"))?;
        let elapsed = t.elapsed();
        let want = layer::f32s(&step["output"]);
        let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .fold(0.0f32, f32::max)
            / scale;
        println!(
            "step {i}: {tokens:>2} token(s) at position {:>2}: {:.2} ms with readback, max error against HF {err:.2e} of the output's scale",
            step["start"],
            elapsed.as_secs_f64() * 1e3,
        );
    }
    Ok(())
}
