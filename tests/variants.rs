//! The RoPE variants of the inference engines against the reference: fused Q+K with GQA,
//! packed QKV, token-major and varlen layouts, per-row starts, out of place, cos/sin caches,
//! bf16, M-RoPE; and the cross-checks that pin conventions (sharding, pair-layout
//! permutation, cache vs on-the-fly).
#![cfg(not(target_arch = "wasm32"))]

#[path = "variants/agreement.rs"]
mod agreement;
#[path = "variants/bf16.rs"]
mod bf16;
#[path = "variants/cache.rs"]
mod cache;
mod common;
#[path = "variants/layouts.rs"]
mod layouts;
#[path = "variants/mrope.rs"]
mod mrope;
#[path = "variants/sinusoidal.rs"]
mod sinusoidal;

use wgpu_posenc::PairLayout;

const TOL: f64 = 1e-6;
const LAYOUTS: [PairLayout; 2] = [PairLayout::Interleaved, PairLayout::HalfSplit];
