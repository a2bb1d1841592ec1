//! Greedy generation with a whole small language model in burn, the bridge's fused QK-norm +
//! RoPE + KV-cache write in every layer (`tests/model`): loads an HF model directory
//! (`config.json`, `model.safetensors`, `golden.json`), prefills the golden prompt, decodes 32
//! tokens, and prints them, whether they are HF's, and the time per token (wall clock; each
//! step reads back its chosen token, which waits for the device).
//!
//! `cargo run -p wgpu-posenc-burn --release --example generate [-- <model dir>]` (without a
//! directory: the three committed test models, Qwen3, Llama 3 and Gemma 3)

#[path = "../tests/model/mod.rs"]
mod model;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use wgpu_posenc_burn::BurnPosEnc;

use model::{Golden, Model, Rotation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bridge = BurnPosEnc::init()?;
    let info = bridge.posenc().device().adapter_info();
    println!(
        "adapter: {} ({:?}), burn's backend {}",
        info.name,
        info.backend,
        std::any::type_name::<burn::backend::Cube>()
    );
    let dirs: Vec<PathBuf> = match std::env::args().nth(1) {
        Some(dir) => vec![dir.into()],
        None => model::MODELS.iter().map(|m| model::model_dir(m)).collect(),
    };
    for dir in dirs {
        run(&bridge, &dir)?;
    }
    Ok(())
}

fn run(bridge: &BurnPosEnc, dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let golden = Golden::read(dir)?;
    let steps = 32;
    let capacity = golden.prompt.len() + steps;
    let mut model = Model::load(bridge, dir, Rotation::Bridge, capacity)?;
    let c = &model.config;
    println!(
        "\n{}: {:?}, {} layers, hidden {}, {} Q / {} KV heads of {}, vocabulary {}",
        dir.display(),
        c.family,
        c.layers,
        c.hidden,
        c.q_heads,
        c.kv_heads,
        c.head_dim,
        c.vocab
    );
    // Twice: the first run compiles the kernels of every new shape (each decode step attends
    // over one more key), the second runs them warm.
    for run in ["cold", "warm"] {
        model.reset();
        let (tokens, times) = timed(&mut model, &golden.prompt, steps)?;
        if run == "cold" {
            println!("tokens: {tokens:?}");
            let same = golden.tokens.len() >= steps && tokens[..] == golden.tokens[..steps];
            println!("equal to HF's generate: {same}");
        }
        let decode = &times[1..];
        let mean = decode.iter().sum::<Duration>() / decode.len().max(1) as u32;
        println!(
            "{run}: prefill {} tokens {:.2} ms ({:.3} ms/token); decode {:.2} ms/token (mean of {})",
            golden.prompt.len(),
            ms(times[0]),
            ms(times[0]) / golden.prompt.len() as f64,
            ms(mean),
            decode.len()
        );
    }
    Ok(())
}

/// Greedy generation, with the wall time of each step up to its token's read-back (step 0:
/// the prefill).
fn timed(
    model: &mut Model,
    prompt: &[u32],
    steps: usize,
) -> Result<(Vec<u32>, Vec<Duration>), Box<dyn std::error::Error>> {
    let mut times: Vec<Duration> = Vec::with_capacity(steps);
    let mut last = Instant::now();
    let tokens = model::greedy(model, prompt, steps, |_, logits| {
        let token = model::argmax_on_device(logits)?;
        let now = Instant::now();
        times.push(now - last);
        last = now;
        Ok(token)
    })?;
    Ok((tokens, times))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
