//! Whole small language models in burn with the bridge's fused QK-norm + RoPE + KV-cache
//! write in every layer (`tests/model`), against HF transformers' `generate(do_sample=False)`
//! on the same weights (`tests/data/models/{qwen3,llama3,gemma3}`): a prefill of the 64-token
//! prompt, then greedy decoding of 32 tokens through the caches. Every chosen token must be
//! HF's, and every step's logits within 1e-4 of HF's relative to their largest magnitude.

mod common;
mod model;

use common::bridge;
use model::{Golden, Model, Rotation};

/// Generates on `name`'s golden prompt and checks every step against HF's.
fn check(name: &str) {
    let dir = model::model_dir(name);
    let golden = Golden::read(&dir).expect("golden.json");
    let steps = golden.tokens.len();
    let capacity = golden.prompt.len() + steps;
    let mut model = Model::load(bridge(), &dir, Rotation::Bridge, capacity).expect("model");
    let mut worst = 0.0f64;
    let start = std::time::Instant::now();
    let tokens = model::greedy(&mut model, &golden.prompt, steps, |step, logits| {
        let got = logits.into_data().try_to_vec::<f32>().expect("f32 logits");
        let want = &golden.logits[step];
        assert_eq!(got.len(), want.len(), "{name} step {step}: vocabulary");
        // Relative to the logits' scale: float32 through every layer.
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(want)
            .map(|(&g, &w)| (f64::from(g) - w).abs())
            .fold(0.0, f64::max)
            / scale;
        assert!(
            err < 1e-4,
            "{name} step {step}: logits off by {err:e} of {scale:.3}"
        );
        worst = worst.max(err);
        Ok(model::argmax(&got))
    })
    .expect("generation");
    assert_eq!(tokens, golden.tokens, "{name}: the generated tokens");
    eprintln!(
        "{name}: {steps} tokens as HF's, max logit error {worst:.2e} of the logits' scale ({:.2} s)",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn qwen3_generates_as_hf() {
    check("qwen3");
}

#[test]
fn llama3_generates_as_hf() {
    check("llama3");
}

#[test]
fn gemma3_generates_as_hf() {
    check("gemma3");
}

/// burn's own rotation path (QK-norm as burn ops, `RotaryEncoding`, `slice_assign` into the
/// caches) on a model's real weights: a lone token at position 0 is not rotated by either
/// RoPE, so its logits must be the bridge's. (Later positions differ: burn pairs interleaved
/// lanes, HF half-split ones.)
#[test]
fn burn_rotation_path_agrees_at_position_zero() {
    for name in ["qwen3", "gemma3"] {
        let dir = model::model_dir(name);
        let logits = |rotation| {
            let mut m = Model::load(bridge(), &dir, rotation, 4).expect("model");
            let out = m.forward(&[7]).expect("forward");
            out.into_data().try_to_vec::<f32>().expect("f32 logits")
        };
        let (ours, burns) = (logits(Rotation::Bridge), logits(Rotation::Burn));
        let scale = ours.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let err = ours
            .iter()
            .zip(&burns)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max)
            / scale;
        eprintln!("{name}: burn's path at position 0 off by {err:.2e} of the logits' scale");
        assert!(err < 1e-5, "{name}: {err:e}");
    }
}

/// The benchmark's model: Qwen3-0.6B's layer dimensions on random weights, both rotation
/// paths, a prefill and two decode steps.
#[test]
fn random_qwen3_06b_layers_run_both_ways() {
    let config = model::config::qwen3_06b_like(1, 4096);
    for rotation in [Rotation::Bridge, Rotation::Burn] {
        let mut m = Model::random(bridge(), &config, rotation, 16).expect("model");
        let prompt: Vec<u32> = (0..8).map(|i| i * 97 % 4096).collect();
        let tokens = model::greedy(&mut m, &prompt, 3, |_, logits| {
            let got = logits.into_data().try_to_vec::<f32>().expect("f32 logits");
            assert_eq!(got.len(), 4096);
            assert!(got.iter().all(|v| v.is_finite()), "{rotation:?}: logits");
            Ok(model::argmax(&got))
        })
        .expect("generation");
        eprintln!("random Qwen3-0.6B-like layer, {rotation:?}: {tokens:?}");
    }
}
