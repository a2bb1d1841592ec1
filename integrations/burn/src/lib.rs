//! [wgpu-posenc](wgpu_posenc)'s kernels on burn's tensors: RoPE in place, Q and K in one
//! dispatch, the fused QKV call (QK-norm, RoPE, KV-cache write) and the sinusoidal table, on
//! burn's own wgpu device and queue, with no copy of the data.
//!
//! ```no_run
//! use burn::tensor::{Distribution, Tensor};
//! use wgpu_posenc::{Positions, RopeSpec};
//! use wgpu_posenc_burn::BurnPosEnc;
//!
//! # fn main() -> Result<(), wgpu_posenc_burn::Error> {
//! // burn's wgpu runtime, and the kernels on its device and queue.
//! let posenc = BurnPosEnc::init()?;
//! let device = posenc.device().clone();
//! let q = Tensor::<4>::random([1, 32, 4096, 128], Distribution::Default, &device);
//! // Instead of burn::nn::RotaryEncoding::forward(q): exact angles, in place.
//! let rope = posenc.rope(&RopeSpec::new().base(500_000.0), 128)?;
//! let q = posenc.apply(&rope, q, Positions::Start(0))?;
//! let scores = q.clone().matmul(q.swap_dims(2, 3)); // burn's next op sees the rotation
//! # Ok(()) }
//! ```
//!
//! [`Rotary`] is the same as a burn `Module` with the calls of burn's `nn::RotaryEncoding`
//! (`forward(x)`, `apply(x, start)`), so that a model swaps one for the other where it builds
//! it; [`BurnPosEnc::qkv`] is a whole attention preprocessing stage.
//!
//! # What the bridge needs of a tensor
//!
//! - **burn 0.22.1's CubeCL backend on wgpu, with kernel fusion on (burn's default) or off.**
//!   Nothing to choose: the bridge follows what burn's `Cube` backend is in the build. Without
//!   fusion a call runs at once on the tensors' buffers; with it, the call is checked at once
//!   and registered in burn's fusion stream as a custom operation, which runs the same kernel
//!   when the stream executes it (a fused block of burn's ends there). A tensor of another
//!   backend or runtime is [`Error::NotWgpu`]; a tensor of another device,
//!   [`Error::OtherDevice`].
//! - f32, f16 or bf16 (f16 where the adapter has `SHADER_F16`); positions i32 or u32.
//! - Rank 4, `[batch, heads, seq, head_dim]` in any order in memory (BHSD, BSHD after a
//!   `swap_dims(1, 2)`, a slice of a packed projection), each row contiguous. Such a view is
//!   bound where it lies: the tensor's own wgpu buffer (CubeCL pools many tensors in one) at its
//!   offset and strides, and nothing outside it changes. Without fusion, a view it cannot bind
//!   (a row with a stride, a broadcast axis, a storage tiling) is [`Error::Layout`]: make it
//!   contiguous in burn first, e.g. with `x.reshape(x.dims())`, if that is what is wanted. With
//!   fusion the layout is known only when the stream runs the call, and such a view is copied
//!   contiguous there first.
//! - A tensor is rewritten in place when it alone holds its buffer. When a clone shares it
//!   (burn tensors are values), the result goes into a new tensor in the same single pass and
//!   the clone keeps its values, as burn's own operations do. A KV cache is always written in
//!   place, so a shared one is [`Error::Shared`].
//!
//! # Ordering
//!
//! Before each dispatch the bridge submits burn's queued work on the stream that runs it (the
//! calling thread's without fusion; the fusion stream's, where burn's earlier kernels were
//! recorded, with it — CubeCL batches kernels into a command buffer of its own), then submits
//! its own commands on the same queue; burn's later work is submitted after them and sees the
//! result. No sync is needed, and none is made: nothing waits for the GPU, and with fusion the
//! calling thread does not wait for the stream either.
//!
//! # Errors
//!
//! Every call checks what the tensors' shapes, dtypes, devices and sharing tell, and the
//! position arrays' dtypes and lengths, before anything runs, and returns the error. With
//! fusion, what only the kernels can find when the stream runs the call (a tensor past one
//! storage binding of the device) makes the call's outputs fail with burn's `ExecutionError`
//! when they are read; nothing panics.
#![warn(missing_docs)]

mod api;
mod bind;
mod bridge;
mod checks;
mod error;
mod fusion;
mod module;
mod ops;
mod route;

pub use bridge::BurnPosEnc;
pub use error::{Error, Result};
pub use module::Rotary;

pub use burn;
pub use wgpu_posenc;
