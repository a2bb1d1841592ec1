//! # wgpu-posenc
//!
//! WGSL compute kernels on wgpu for the positional encodings of transformers: the sinusoidal
//! table of Vaswani et al. (2017) and rotary position embedding (RoPE) applied in place to
//! `[batch, heads, seq, dim]` GPU buffers.
//!
//! - [`PosEnc`] holds a device and queue and the compiled pipelines. `encode_*` methods
//!   record into your command encoder; `*_host` methods run on host slices.
//! - [`Layout`] / [`TensorView`] describe a tensor by offset, shape and strides, so BHSD,
//!   BSHD and other layouts are the same call.
//! - Angles are exact at every u32 position: each frequency is held as 64-bit fixed-point
//!   revolutions and reduced in integer arithmetic on the GPU, then a polynomial gives sin
//!   and cos within 1.5e-7 of the real-number value. The WGSL built-in `sin`/`cos` are not used.
//! - [`mod@reference`] is the scalar f64 CPU twin of every kernel.
//!
//! ```no_run,ignore-wasm32
//! use wgpu_posenc::{HostPositions, Layout, PairLayout, PosEnc, RopeSpec};
//! let ctx = PosEnc::with_default_adapter()?;
//! let layout = Layout::bhsd([1, 8, 128, 64]);
//! let mut q = vec![0.5f32; 8 * 128 * 64];
//! let spec = RopeSpec::new().pair_layout(PairLayout::HalfSplit).base(10_000.0);
//! ctx.rope_host(&spec, layout, &mut q, HostPositions::Start(0))?;
//! # Ok::<(), wgpu_posenc::Error>(())
//! ```
//!
//! Every method that waits for the GPU has an async form, and in a browser (wasm32, on the
//! page's WebGPU) only those exist, since a page cannot block:
//!
//! ```no_run
//! use wgpu_posenc::{HostPositions, Layout, PosEnc, RopeSpec};
//! # async fn run() -> wgpu_posenc::Result<()> {
//! let ctx = PosEnc::with_default_adapter_async().await?;
//! let layout = Layout::bhsd([1, 8, 128, 64]);
//! let mut q = vec![0.5f32; 8 * 128 * 64];
//! let positions = HostPositions::Start(0);
//! ctx.rope_host_async(&RopeSpec::new(), layout, &mut q, positions).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod angle;
mod axes;
mod context;
mod dd;
mod error;
pub mod frequencies;
mod grid;
#[cfg(feature = "hf-config")]
mod hf;
mod host;
/// The pair-pass internals (shader assembly, specializations, planning): not a stable API,
/// public only with the feature `internals` (for the shader translation tests).
#[cfg(feature = "internals")]
pub mod kernels;
#[cfg(not(feature = "internals"))]
pub(crate) mod kernels;
mod learned;
mod position_grid;
mod positions;
pub mod reference;
#[cfg(feature = "roofline")]
pub mod roofline;
mod sinusoid;
mod spec;
mod tensor;
pub mod wgsl;

pub use context::PosEnc;
pub use error::{Error, Result};
pub use frequencies::{Frequencies, FrequencyError, Llama3, LongRope, Scaling, Yarn};
pub use grid::{GridBlock, MAX_GRID_TOKENS, SincosGrid};
#[cfg(feature = "hf-config")]
pub use hf::{
    DIFFUSERS_ROPE_NOT_READ, DIFFUSERS_WITHOUT_PROJECTION, DIFFUSERS_WITHOUT_ROPE_MODULE,
    DIFFUSERS_WITHOUT_TABLE, HF_VISION_ROPE_NOT_READ, HfQkNorm, HfRope, LayerRope, PositionAxis,
    RotaryModule, TimestepProjection,
};
#[cfg(feature = "capture")]
pub use kernels::capture;
pub use kernels::device::CacheUsage;
pub use kernels::fused::{CacheIndex, KvCache, QkvCall};
pub use kernels::pass::EncodeReport;
pub use kernels::rope::{Rope, RopeCall};
pub use learned::LearnedFrequencies;
pub use position_grid::{
    GRID_DIMS, GridAxis, GridSegment, MAX_GRID_SEGMENTS, MAX_HOST_POSITIONS, PositionGrid,
};
pub use positions::{HostPositions, Positions};
pub use sinusoid::{SinusoidalLayout, SinusoidalSpec, Timescales};
pub use spec::{
    AxisFrequencies, Dtype, FrequencyUnit, MRope, MRopeOrder, NormWeight, OutputOrder, PairLayout,
    QkNorm, RopeSpec,
};
pub use tensor::{ArrayView, CosSinCache, Dims, Layout, TensorView};
