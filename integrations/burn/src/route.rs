//! Which way a call goes, decided by burn's `Cube` backend type: with burn's `fusion` feature
//! off, `Cube` is `CubeBackend` and a call runs at once on its CubeCL tensors (`ops.rs`);
//! with it on (burn's default), `Cube` is `Fusion<CubeBackend>` and a call is registered in
//! the fusion stream as a custom operation that runs the same code when the stream executes
//! it (`fusion.rs`). Both are implementations of one trait on the two types, so the bridge
//! compiles and behaves the same with fusion on or off and nobody matches a feature by hand.

use burn::backend::BackendTypes;
use burn::backend::wgpu::CubeBackend;
use wgpu_posenc::Positions;

use crate::ops::{Call, Unbindable};
use crate::{BurnPosEnc, Result};

/// A backend the bridge runs on: `CubeBackend` or `Fusion<CubeBackend>`.
pub(crate) trait Route: BackendTypes {
    /// Runs `call` on `tensors` (in the order [`Call`] says) at `positions`; returns its
    /// output tensors, or the error of a call that cannot run.
    fn run(
        bridge: &BurnPosEnc,
        call: Call,
        tensors: Vec<Self::FloatTensorPrimitive>,
        positions: Positions<Self::IntTensorPrimitive>,
    ) -> Result<Vec<Self::FloatTensorPrimitive>>;
}

impl Route for CubeBackend {
    fn run(
        bridge: &BurnPosEnc,
        call: Call,
        tensors: Vec<Self::FloatTensorPrimitive>,
        positions: Positions<Self::IntTensorPrimitive>,
    ) -> Result<Vec<Self::FloatTensorPrimitive>> {
        bridge.run_cube(&call, tensors, positions, Unbindable::Refuse)
    }
}
