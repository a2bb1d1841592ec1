//! Grouped-query attention's sharing of KV heads, for the attention layer (`tests/layer`) and
//! the models (`tests/model`).

use burn::tensor::Tensor;

/// The first `total` tokens of a cache `[1, kv_heads, len, d]`, each KV head repeated for the
/// `q_heads / kv_heads` Q heads that read it: `[1, q_heads, total, d]`.
pub fn repeat_kv(cache: &Tensor<4>, q_heads: usize, total: usize) -> Tensor<4> {
    let [_, kv_heads, _, d] = cache.dims();
    cache
        .clone()
        .narrow(2, 0, total)
        .unsqueeze_dim::<5>(2)
        .expand([1, kv_heads, q_heads / kv_heads, total, d])
        .reshape([1, q_heads, total, d])
}
