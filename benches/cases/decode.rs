//! The one-token decode step of the throughput cases.

use wgpu_posenc::{Layout, PosEnc, Positions, Result, RopeSpec, TensorView};

use super::{DECODE_POSITION, HEAD_DIM, HEADS, KV_HEADS};

/// The decode step: Q `[1, 32, 1, 128]` and K `[1, 8, 1, 128]` at one position, rotated in
/// one submit by two `encode_rope` calls, or by one `encode_rope_qk`.
pub struct Decode {
    /// Q.
    pub q: wgpu::Buffer,
    /// K.
    pub k: wgpu::Buffer,
}

impl Decode {
    /// Allocates Q and K.
    pub fn new(ctx: &PosEnc) -> Self {
        let buffer = |heads: u64| {
            ctx.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("throughput decode"),
                size: heads * HEAD_DIM * 4,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        Self {
            q: buffer(HEADS),
            k: buffer(KV_HEADS),
        }
    }

    /// Bytes read plus written by one step.
    pub fn moved() -> u64 {
        2 * (HEADS + KV_HEADS) * HEAD_DIM * 4
    }

    /// Records RoPE over Q and K at [`DECODE_POSITION`].
    pub fn record(&self, ctx: &PosEnc, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let spec = RopeSpec::new();
        for (buffer, heads) in [(&self.q, HEADS), (&self.k, KV_HEADS)] {
            let layout = Layout::bhsd([1, heads, 1, HEAD_DIM]);
            ctx.encode_rope(
                encoder,
                &spec,
                &TensorView::new(buffer, layout),
                Positions::Start(DECODE_POSITION),
            )?;
        }
        Ok(())
    }

    /// Records RoPE over Q and K at [`DECODE_POSITION`] in one dispatch
    /// ([`PosEnc::encode_rope_qk`]: one angle per (token, pair) for all 40 heads).
    pub fn record_qk(&self, ctx: &PosEnc, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        ctx.encode_rope_qk(
            encoder,
            &RopeSpec::new(),
            &TensorView::new(&self.q, Layout::bhsd([1, HEADS, 1, HEAD_DIM])),
            &TensorView::new(&self.k, Layout::bhsd([1, KV_HEADS, 1, HEAD_DIM])),
            Positions::Start(DECODE_POSITION),
        )
        .map(drop)
    }
}
