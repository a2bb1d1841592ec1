//! The bridge's errors.

use burn::tensor::DType;

/// What went wrong, and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernels refused the call.
    #[error(transparent)]
    PosEnc(#[from] wgpu_posenc::Error),
    /// The tensor is not one of burn's CubeCL backend on wgpu, or CubeCL refused its buffer.
    #[error(
        "{what} is not a tensor of burn's wgpu backend, or its buffer cannot be had ({detail}): \
         create it on BurnPosEnc::device()"
    )]
    NotWgpu {
        /// Which argument.
        what: &'static str,
        /// burn's or CubeCL's words.
        detail: String,
    },
    /// The tensor lives on another device than the bridge's.
    #[error("{what} lives on {found}, the bridge on {ours}: move it with Tensor::to_device")]
    OtherDevice {
        /// Which argument.
        what: &'static str,
        /// The tensor's device.
        found: String,
        /// The bridge's.
        ours: String,
    },
    /// The tensor's element type is not one the kernels take.
    #[error("{what} has dtype {dtype:?}; {expected}")]
    Dtype {
        /// Which argument.
        what: &'static str,
        /// Its dtype.
        dtype: DType,
        /// What is taken.
        expected: &'static str,
    },
    /// The tensor's memory layout cannot be bound as a view.
    #[error(
        "{what} (shape {shape:?}, strides {strides:?}) cannot be bound where it lies: {why}; make \
         a contiguous copy in burn first (e.g. x.reshape(x.dims())) if that is what you want"
    )]
    Layout {
        /// Which argument.
        what: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// Its strides, in elements.
        strides: Vec<usize>,
        /// What is wrong.
        why: &'static str,
    },
    /// A tensor that must be written in place shares its buffer with another tensor.
    #[error(
        "{what} shares its buffer with another tensor (a clone): it is written in place, so drop \
         the other handle first"
    )]
    Shared {
        /// Which argument.
        what: &'static str,
    },
    /// burn's runtime failed to set up or to hand over a buffer.
    #[error("burn's wgpu runtime: {0}")]
    Runtime(String),
}

/// The bridge's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
