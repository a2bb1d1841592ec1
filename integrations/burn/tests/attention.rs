//! One Qwen3-style attention layer end to end in burn, with the bridge's fused QK-norm +
//! RoPE + KV-cache write as its preprocessing stage (`tests/layer`), against HF
//! transformers' own `Qwen3Attention` on the same weights and inputs
//! (`tests/data/qwen3_attention.py`): a prefill of 16 tokens, then 4 decode steps through the
//! cache.

mod layer;

use burn::tensor::{Tensor, TensorData};
use wgpu_posenc_burn::BurnPosEnc;

#[test]
fn a_qwen3_attention_layer_matches_hf() {
    let bridge = BurnPosEnc::init().expect("burn's wgpu runtime and the kernels");
    let golden = layer::golden();
    let hidden_size = golden["hidden_size"].as_u64().expect("hidden") as usize;
    let mut attention = layer::Attention::from_golden(&bridge, &golden, 32).expect("layer");
    let steps = golden["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 5);
    for (i, step) in steps.iter().enumerate() {
        let hidden = layer::f32s(&step["hidden"]);
        let tokens = hidden.len() / hidden_size;
        let input = Tensor::<3>::from_data(
            TensorData::new(hidden, [1, tokens, hidden_size]),
            bridge.device(),
        );
        let got = attention
            .forward(&bridge, input)
            .expect("forward")
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        let want: Vec<f64> = step["output"]
            .as_array()
            .expect("output")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect();
        assert_eq!(got.len(), want.len(), "step {i}");
        // Relative to the output's scale: float32 through two matmuls, the norm and softmax.
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let err = got
            .iter()
            .zip(&want)
            .map(|(&g, &w)| (f64::from(g) - w).abs())
            .fold(0.0, f64::max)
            / scale;
        eprintln!(
            "step {i} ({tokens} tokens): max error {err:.2e} of the output's scale {scale:.3}"
        );
        assert!(err < 1e-5, "step {i}: {err:e}");
    }
}
