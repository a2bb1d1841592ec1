//! Host side of the kernels: shader assembly, specialization, and the dispatch of one pass
//! over a strided view, split into blocks that fit the adapter's limits.
//!
//! Both encodings are the same pass: for every (batch, token) row group and every pair of
//! the first `row_len` elements, compute the pair's angle once and apply an operation to
//! that pair in every head. Only the operation differs (rotate, write sin/cos, add).

pub(crate) mod bind;
pub(crate) mod cache;
#[cfg(feature = "capture")]
pub mod capture;
pub(crate) mod device;
pub(crate) mod fused;
pub(crate) mod grid;
pub(crate) mod groups;
pub(crate) mod input;
mod learned;
pub(crate) mod pass;
pub(crate) mod plan;
pub(crate) mod position_grid;
pub(crate) mod rope;
pub(crate) mod scope;
pub(crate) mod sinusoidal;
pub(crate) mod standalone;

/// The composed shader sources (`build.rs`).
pub(crate) mod composed {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}

use crate::spec::{Dtype, PairLayout};

/// Which kernel, and with which operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kernel {
    /// `shaders/rope.wgsl`: rotate every pair.
    Rope,
    /// `shaders/sinusoidal.wgsl`: write the sin/cos table, or add it to embeddings.
    Sinusoidal,
    /// `shaders/fused.wgsl`: packed QKV to rotated Q and a KV cache, one dispatch.
    Fused,
}

/// Pairs per invocation and how they are accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// One pair per invocation, scalar loads: any even row length, any offset.
    X1,
    /// Four pairs per invocation, vec4 loads: row length a multiple of 8, offset and
    /// strides multiples of 4 elements.
    X4,
}

impl Width {
    /// Pairs per invocation.
    pub fn pairs(self) -> u64 {
        match self {
            Width::X1 => 1,
            Width::X4 => 4,
        }
    }
}

/// Where positions come from, as compiled into a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PositionMode {
    /// Contiguous from a start.
    Start,
    /// One start per batch row.
    BatchStarts,
    /// Ids `[batch, seq]`.
    Ids,
    /// Packed sequences by `cu_seqlens`, with or without per-sequence offsets.
    Varlen {
        /// Per-sequence offsets are bound.
        offsets: bool,
    },
    /// Three M-RoPE axes `[3, batch, seq]`.
    Axes,
    /// f32 positions `[batch, seq]` (their bits).
    Float,
    /// f32 positions on three axes `[3, batch, seq]` (their bits).
    FloatAxes,
}

impl PositionMode {
    /// Every mode that reads positions from GPU arrays.
    #[cfg(any(test, feature = "internals"))]
    const GPU: [PositionMode; 7] = [
        PositionMode::BatchStarts,
        PositionMode::Ids,
        PositionMode::Varlen { offsets: false },
        PositionMode::Varlen { offsets: true },
        PositionMode::Axes,
        PositionMode::Float,
        PositionMode::FloatAxes,
    ];

    fn code(self) -> f64 {
        match self {
            PositionMode::Start => 0.0,
            PositionMode::BatchStarts => 1.0,
            PositionMode::Ids => 2.0,
            PositionMode::Varlen { .. } => 3.0,
            PositionMode::Axes => 4.0,
            PositionMode::Float => 5.0,
            PositionMode::FloatAxes => 6.0,
        }
    }
}

/// The role of the second tensor binding of a RoPE pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Second {
    /// One tensor, in place.
    None,
    /// A second tensor (K) rotated in place with the same angles.
    InPlace,
    /// The source of an out-of-place rotation into the first tensor.
    Source,
}

/// What a variant does, with the options that mean something for that kernel only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `shaders/rope.wgsl`: rotate.
    Rope {
        /// The role of the second tensor binding.
        second: Second,
        /// With a second tensor: both tensors are windows of one buffer bound once, as `x`
        /// (WebGPU forbids two writable bindings of one buffer that overlap).
        shared: bool,
    },
    /// `shaders/sinusoidal.wgsl`: write the table, or add it.
    Sinusoidal {
        /// Add the encoding to the data rather than writing the table.
        add: bool,
        /// Zero the row of the padding position.
        pad: bool,
        /// The cosine in a pair's first element, the sine in its second (diffusers'
        /// `flip_sin_to_cos`).
        flip: bool,
    },
    /// `shaders/fused.wgsl`: Q rotated, K rotated and V copied into a KV cache.
    Fused {
        /// The storage type of the KV cache.
        cache: Dtype,
        /// Slots from a slot mapping rather than positions.
        paged: bool,
        /// Q into its own tensor rather than in place.
        q_out: bool,
        /// Q and K normalized per head before the rotation by this many invocations a
        /// token, each a workgroup of its own (0: no QK-norm).
        qk_norm: u8,
        /// With QK-norm: a token's invocations add their sums by subgroup shuffles (the
        /// device has `Features::SUBGROUP` and its smallest subgroup holds them), else
        /// through workgroup memory.
        subgroups: bool,
    },
}

/// One compiled variant of a kernel: everything that changes the shader text or its
/// override constants. Pipelines are cached per value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Specialization {
    /// The kernel and its own options.
    pub op: Op,
    /// Which elements pair up.
    pub pair_layout: PairLayout,
    /// Pairs per invocation.
    pub width: Width,
    /// Storage type.
    pub dtype: Dtype,
    /// Where positions come from.
    pub positions: PositionMode,
    /// Angles from a caller's cos/sin cache instead of the frequencies.
    pub from_cache: bool,
    /// Interleaved pairs written to another buffer as all first elements, then all second
    /// ones ([`crate::OutputOrder::PairHalves`]): the out-of-place output, the fused call's
    /// `q_out` and K cache.
    pub pair_halves: bool,
    /// Position axes read from four planes (a fourth axis, [`crate::RopeSpec::axes_rope4`]),
    /// not three.
    pub axes4: bool,
    /// Half-split pairs within blocks ([`crate::RopeSpec::pair_blocks`] above 1; RoPE only).
    pub blocks: bool,
    /// The axes of a caller's frequency table ([`crate::RopeSpec::learned`]; RoPE only), 0
    /// without one.
    pub dense: u8,
    /// Cos and sin rounded to bf16 ([`crate::RopeSpec::cos_sin_bf16`]; RoPE only).
    pub cos_sin_bf16: bool,
    /// Position sets a token whose cos and sin are averaged ([`crate::RopeSpec::pool`]; RoPE
    /// only), 1 for one position.
    pub pool: u8,
    /// Each element of a pair at its own angle: two angles a pair, the second set of
    /// frequencies after the first ([`crate::RopeSpec::table_layout`]; RoPE only).
    pub lane_angles: bool,
}

impl Specialization {
    /// The plain variant of a kernel: contiguous positions, one tensor in place, on-the-fly
    /// angles.
    pub fn new(kernel: Kernel, pair_layout: PairLayout, width: Width, dtype: Dtype) -> Self {
        Self {
            op: match kernel {
                Kernel::Rope => Op::Rope {
                    second: Second::None,
                    shared: false,
                },
                Kernel::Sinusoidal => Op::Sinusoidal {
                    add: false,
                    pad: false,
                    flip: false,
                },
                Kernel::Fused => Op::Fused {
                    cache: dtype,
                    paged: false,
                    q_out: false,
                    qk_norm: 0,
                    subgroups: false,
                },
            },
            pair_layout,
            width,
            dtype,
            positions: PositionMode::Start,
            from_cache: false,
            pair_halves: false,
            axes4: false,
            blocks: false,
            dense: 0,
            cos_sin_bf16: false,
            pool: 1,
            lane_angles: false,
        }
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel {
        match self.op {
            Op::Rope { .. } => Kernel::Rope,
            Op::Sinusoidal { .. } => Kernel::Sinusoidal,
            Op::Fused { .. } => Kernel::Fused,
        }
    }

    /// The role of the second tensor binding (none for the sinusoidal kernel).
    pub fn second(&self) -> Second {
        match self.op {
            Op::Rope { second, .. } => second,
            Op::Sinusoidal { .. } | Op::Fused { .. } => Second::None,
        }
    }

    /// Whether view B goes through binding `x` (RoPE only).
    pub fn shared(&self) -> bool {
        matches!(self.op, Op::Rope { shared: true, .. })
    }

    /// The same RoPE variant with another role for the second binding (and no sharing of
    /// a binding without a second tensor).
    pub fn with_second(self, second: Second) -> Self {
        let shared = self.shared();
        self.with_rope(second, shared)
    }

    /// The same RoPE variant with view B through binding `x` or its own.
    pub fn with_shared(self, shared: bool) -> Self {
        let second = self.second();
        self.with_rope(second, shared)
    }

    fn with_rope(self, second: Second, shared: bool) -> Self {
        match self.op {
            Op::Rope { .. } => Self {
                op: Op::Rope {
                    second,
                    shared: shared && second != Second::None,
                },
                ..self
            },
            Op::Sinusoidal { .. } | Op::Fused { .. } => self,
        }
    }

    /// The WGSL source of this variant (override constants still to be set): composed at
    /// build time from `shaders/` by `build.rs`, whose define lists these indices follow.
    pub fn source(&self) -> &'static str {
        let index = |d: Dtype| match d {
            Dtype::F32 => 0,
            Dtype::F16 => 1,
            Dtype::BF16 => 2,
        };
        let pairs = match self.pair_layout {
            PairLayout::Interleaved => 0,
            PairLayout::HalfSplit => 1,
        };
        let width = match self.width {
            Width::X1 => 0,
            Width::X4 => 1,
        };
        let dtype = index(self.dtype);
        match self.op {
            Op::Rope { .. } => composed::SOURCES[0][pairs][width][dtype],
            Op::Sinusoidal { .. } => composed::SOURCES[1][pairs][width][dtype],
            Op::Fused {
                cache, subgroups, ..
            } => composed::FUSED[pairs][width][dtype][index(cache)][usize::from(subgroups)],
        }
    }

    /// The source as naga reads it: WebGPU requires `enable subgroups;` before the subgroup
    /// built-ins, which naga 30 refuses while it compiles the built-ins themselves (under
    /// `Capabilities::SUBGROUP`), so the directive is blanked (the line numbers stay).
    pub fn naga_source(&self) -> std::borrow::Cow<'static, str> {
        let source = self.source();
        match source.contains(SUBGROUPS) {
            true => source.replacen(SUBGROUPS, "", 1).into(),
            false => source.into(),
        }
    }

    /// The override constants this variant sets.
    pub fn constants(&self) -> Vec<(&'static str, f64)> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let mut constants = vec![
            ("POS_MODE", self.positions.code()),
            (
                "HAS_OFFSETS",
                flag(matches!(
                    self.positions,
                    PositionMode::Varlen { offsets: true }
                )),
            ),
            ("FROM_CACHE", flag(self.from_cache)),
            ("SHARED", flag(self.shared())),
        ];
        // Declared by every variant (shaders/pairs.wgsl); only set where on, so that the
        // constants of the other variants read as before.
        if self.pair_halves {
            constants.push(("PAIR_HALVES", 1.0));
        }
        // Declared by every variant (shaders/common.wgsl), set where on.
        if self.axes4 {
            constants.push(("AXES4", 1.0));
        }
        // Declared by every variant (shaders/pairs.wgsl), set where on.
        if self.blocks {
            constants.push(("BLOCKS", 1.0));
        }
        // Declared by every variant (shaders/common.wgsl), set where on.
        if self.dense > 0 {
            constants.push(("DENSE", f64::from(self.dense)));
        }
        // Declared by the RoPE kernel (shaders/rope.wgsl), set where on.
        if self.cos_sin_bf16 && self.kernel() == Kernel::Rope {
            constants.push(("COS_SIN_BF16", 1.0));
        }
        // Declared by the RoPE kernel (shaders/rope.wgsl), set where pooled.
        if self.pool > 1 && self.kernel() == Kernel::Rope {
            constants.push(("POOL", f64::from(self.pool)));
        }
        // Declared by the RoPE kernel (shaders/rope.wgsl), set where on.
        if self.lane_angles && self.kernel() == Kernel::Rope {
            constants.push(("LANE_ANGLES", 1.0));
        }
        match self.op {
            Op::Rope { second, .. } => constants.push((
                "SECOND",
                match second {
                    Second::None => 0.0,
                    Second::InPlace => 1.0,
                    Second::Source => 2.0,
                },
            )),
            Op::Sinusoidal { add, pad, flip } => {
                constants.push(("ADD", flag(add)));
                constants.push(("PAD", flag(pad)));
                constants.push(("FLIP", flag(flip)));
            }
            Op::Fused {
                paged,
                q_out,
                qk_norm,
                ..
            } => {
                constants.push(("PAGED", flag(paged)));
                constants.push(("Q_OUT", flag(q_out)));
                constants.push(("QK_NORM", flag(qk_norm > 0)));
                if qk_norm > 0 {
                    constants.push(("WG", f64::from(qk_norm)));
                }
            }
        }
        constants
    }

    /// Every plain variant, and each of them with each option on its own (for shader
    /// validation tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn all() -> Vec<Specialization> {
        let mut all = Vec::new();
        for kernel in [Kernel::Rope, Kernel::Sinusoidal] {
            for pair_layout in [PairLayout::Interleaved, PairLayout::HalfSplit] {
                for width in [Width::X1, Width::X4] {
                    for dtype in [Dtype::F32, Dtype::F16, Dtype::BF16] {
                        let plain = Specialization::new(kernel, pair_layout, width, dtype);
                        all.push(plain);
                        // f32 axes are RoPE's only (the sinusoidal encoding has one position a
                        // token).
                        for positions in PositionMode::GPU {
                            if positions != PositionMode::FloatAxes || kernel == Kernel::Rope {
                                all.push(Specialization { positions, ..plain });
                            }
                        }
                        // Four position planes: RoPE's, u32 or f32.
                        if kernel == Kernel::Rope {
                            for positions in [PositionMode::Axes, PositionMode::FloatAxes] {
                                all.push(Specialization {
                                    positions,
                                    axes4: true,
                                    ..plain
                                });
                            }
                        }
                        all.push(Specialization {
                            from_cache: true,
                            ..plain
                        });
                        match kernel {
                            Kernel::Rope => all.extend(Self::rope_options(plain, pair_layout)),
                            Kernel::Sinusoidal => all.extend(Self::sinusoidal_options(plain)),
                            Kernel::Fused => {}
                        }
                    }
                }
            }
        }
        all.extend(Self::all_fused());
        all
    }

    /// A plain RoPE variant with each of its options: K and out of place, pooled positions,
    /// bf16 cos and sin, lane angles, pair-halves order or pair blocks, a caller's table.
    #[cfg(any(test, feature = "internals"))]
    fn rope_options(plain: Specialization, pair_layout: PairLayout) -> Vec<Specialization> {
        let mut all = Vec::new();
        for second in [Second::InPlace, Second::Source] {
            all.push(plain.with_second(second));
            all.push(plain.with_second(second).with_shared(true));
        }
        // Pooled positions, u32 and f32 axes, with K.
        for positions in [PositionMode::Axes, PositionMode::FloatAxes] {
            for pool in [2, 8] {
                all.push(Specialization {
                    positions,
                    pool,
                    ..plain.with_second(Second::InPlace)
                });
            }
        }
        // Cos and sin rounded to bf16, and each element at its
        // own angle, with K and out of place.
        for second in [Second::InPlace, Second::Source] {
            all.push(Specialization {
                cos_sin_bf16: true,
                ..plain.with_second(second)
            });
            all.push(Specialization {
                lane_angles: true,
                positions: PositionMode::FloatAxes,
                ..plain.with_second(second)
            });
        }
        if pair_layout == PairLayout::Interleaved {
            all.push(Specialization {
                pair_halves: true,
                ..plain.with_second(Second::Source)
            });
        } else {
            // Pairs in blocks, in place, with K and out of place.
            for second in [Second::None, Second::InPlace, Second::Source] {
                all.push(Specialization {
                    blocks: true,
                    ..plain.with_second(second)
                });
            }
        }
        // A caller's table on one axis and on three (f32 axes too),
        // in place, with K and out of place.
        for (dense, positions) in [
            (1, PositionMode::Ids),
            (3, PositionMode::Axes),
            (3, PositionMode::FloatAxes),
        ] {
            for second in [Second::None, Second::InPlace, Second::Source] {
                all.push(Specialization {
                    dense,
                    positions,
                    ..plain.with_second(second)
                });
            }
        }
        all
    }

    /// A plain sinusoidal variant with each of its operations: the add, padded, flipped.
    #[cfg(any(test, feature = "internals"))]
    fn sinusoidal_options(plain: Specialization) -> Vec<Specialization> {
        let mut all = Vec::new();
        for (add, pad, flip) in [
            (true, false, false),
            (true, true, false),
            (false, false, true),
        ] {
            all.push(Specialization {
                op: Op::Sinusoidal { add, pad, flip },
                ..plain
            });
        }
        all
    }

    /// Every fused variant: each pair layout, dtype and cache dtype, with each position mode,
    /// and paged or with Q out on their own.
    #[cfg(any(test, feature = "internals"))]
    fn all_fused() -> Vec<Specialization> {
        let mut all = Vec::new();
        let dtypes = [Dtype::F32, Dtype::F16, Dtype::BF16];
        for (pair_layout, width) in [PairLayout::Interleaved, PairLayout::HalfSplit]
            .into_iter()
            .flat_map(|p| [(p, Width::X1), (p, Width::X4)])
        {
            for dtype in dtypes {
                for cache in dtypes {
                    let op = |paged, q_out, qk_norm, subgroups| Op::Fused {
                        cache,
                        paged,
                        q_out,
                        qk_norm,
                        subgroups,
                    };
                    let plain = Specialization {
                        op: op(false, false, 0, false),
                        ..Specialization::new(Kernel::Fused, pair_layout, width, dtype)
                    };
                    all.push(plain);
                    for positions in PositionMode::GPU {
                        if !matches!(positions, PositionMode::Float | PositionMode::FloatAxes) {
                            all.push(Specialization { positions, ..plain });
                        }
                    }
                    for (paged, q_out, norm) in [
                        (true, false, 0),
                        (false, true, 0),
                        (true, true, 0),
                        (false, true, 8),
                        (true, false, 4),
                    ] {
                        all.push(Specialization {
                            op: op(paged, q_out, norm, false),
                            pair_halves: q_out && pair_layout == PairLayout::Interleaved,
                            ..plain
                        });
                    }
                    // The subgroup sum, in place and out.
                    for (q_out, norm) in [(false, 8), (true, 4)] {
                        all.push(Specialization {
                            op: op(false, q_out, norm, true),
                            ..plain
                        });
                    }
                }
            }
        }
        all
    }
}

/// The directive of the subgroup variants (see [`Specialization::naga_source`]).
const SUBGROUPS: &str = "enable subgroups;";

/// Threads per workgroup; matches `@workgroup_size` in the kernels.
pub(crate) const WORKGROUP: u64 = 64;
