//! Rotary modules whose frequencies are weights: read from a transformer's `config.json`
//! and its checkpoint (`model.safetensors`). Mochi's `MochiRoPE` turns by the learned
//! `pos_frequencies` `[3, heads, head_dim / 2]` of `MochiTransformer3DModel`.

use std::io::{Read, Seek};

use serde_json::Value;

use super::diffusers::read_class;
use super::diffusers_rope::RotaryModule;
use super::safetensors::read_tensor;
use crate::error::{Error, Result};
use crate::learned::LearnedFrequencies;
use crate::spec::{PairLayout, RopeSpec};

impl RotaryModule {
    /// The rotary modules of a diffusers transformer from its `config.json` and its
    /// checkpoint: what [`RotaryModule::from_diffusers_config`] reads, and Mochi
    /// (`MochiTransformer3DModel`), whose `MochiRoPE` turns pair `j` of head `h` by
    /// `t F[0,h,j] + y F[1,h,j] + x F[2,h,j]` with the checkpoint's `pos_frequencies` `F`
    /// (F32, BF16, F16 or F64; `weights` is `model.safetensors`, or the shard holding that
    /// tensor): a [`RopeSpec::learned`] table per head over interleaved pairs (its attention
    /// rotates `x[..., 0::2]` with `x[..., 1::2]`), at the positions of
    /// [`PositionGrid::mochi`](crate::PositionGrid::mochi). Only the header and that
    /// tensor are read. A tensor of the wrong shape, or a file that is not safetensors, is
    /// an [`Error::InvalidCheckpoint`].
    pub fn from_diffusers_checkpoint(
        config: &Value,
        weights: &mut (impl Read + Seek),
    ) -> Result<Vec<Self>> {
        let (keys, class) = read_class(config)?;
        if class != "MochiTransformer3DModel" {
            return Self::from_diffusers_config(config);
        }
        let heads = keys.opt_u("num_attention_heads")?.unwrap_or(24);
        let head_dim = keys.opt_u("attention_head_dim")?.unwrap_or(128);
        let tensor = read_tensor(weights, "pos_frequencies")?;
        let want = [3, heads, head_dim / 2];
        if tensor.shape != want || head_dim % 2 != 0 {
            return Err(Error::InvalidCheckpoint {
                reason: format!(
                    "pos_frequencies of shape {:?}: the config's {heads} heads of {head_dim} \
                     need [3, {heads}, {}]",
                    tensor.shape,
                    head_dim / 2
                ),
            });
        }
        let table = LearnedFrequencies::new(3, heads, tensor.values);
        // Finite, and within what the kernels reduce exactly.
        table.check(head_dim / 2)?;
        let spec = RopeSpec::new()
            .pair_layout(PairLayout::Interleaved)
            .learned(table);
        Ok(vec![RotaryModule {
            path: "rope",
            module: "MochiRoPE",
            spec,
            head_dim,
            position_axis: super::diffusers_rope::PositionAxis::Token,
        }])
    }
}
