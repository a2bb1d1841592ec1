//! The crate's one error type. Every fallible call returns [`Result`].

/// Everything that can go wrong, each variant naming the problem and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No adapter could be found on this machine.
    #[error(
        "no wgpu adapter found (WGPU_BACKEND={backend}). On a machine without a GPU, install \
         Mesa's lavapipe Vulkan driver (`apt-get install -y mesa-vulkan-drivers libvulkan1`) \
         or run with WGPU_BACKEND=gl to use Mesa llvmpipe through EGL"
    )]
    NoAdapter {
        /// The value of `WGPU_BACKEND`, or `unset`.
        backend: String,
    },
    /// In a browser (wasm32): the page's WebGPU gave no adapter.
    #[error(
        "the page has no WebGPU adapter (navigator.gpu is absent, or its requestAdapter() gave \
         none). Use a browser with WebGPU enabled (Chrome or Edge 113+, Safari 26+, Firefox \
         141+ on Windows); on Linux, Chromium needs --enable-unsafe-webgpu, and headless \
         without a GPU also --use-webgpu-adapter=swiftshader"
    )]
    NoWebGpu,
    /// `WGPU_ADAPTER_NAME` names no adapter that is present.
    #[error(
        "WGPU_ADAPTER_NAME={name:?} matches none of the adapters present: {available:?}; \
         unset it or give part of one of these names"
    )]
    AdapterNotFound {
        /// The requested name.
        name: String,
        /// Names of the adapters found.
        available: Vec<String>,
    },
    /// The adapter refused the device request.
    #[error("requesting a device failed: {0}")]
    RequestDevice(#[from] wgpu::RequestDeviceError),
    /// `head_dim` is zero, odd, or above [`crate::RopeSpec::MAX_HEAD_DIM`].
    #[error(
        "head_dim {head_dim} must be even, non-zero and at most 1048576 \
         (RopeSpec::MAX_HEAD_DIM): RoPE rotates pairs of elements"
    )]
    InvalidHeadDim {
        /// The value given.
        head_dim: u64,
    },
    /// The rotary dimension is zero, odd, or larger than `head_dim`.
    #[error(
        "rotary_dim {rotary_dim} must be even, non-zero and at most head_dim {head_dim} \
         (the tail [rotary_dim, head_dim) is left untouched)"
    )]
    InvalidRotaryDim {
        /// The value given.
        rotary_dim: u64,
        /// The tensor's head dimension.
        head_dim: u64,
    },
    /// A [`PositionGrid`](crate::PositionGrid) the crate cannot build: the reason says which
    /// segment and axis, and what it needs.
    #[error("position grid: {reason}")]
    InvalidPositionGrid {
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A checkpoint file (safetensors) the crate cannot read the weights it needs from.
    #[error("checkpoint: {reason}")]
    InvalidCheckpoint {
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A learned frequency table of the wrong shape.
    #[error(
        "a learned frequency table of {axes} axes and {heads} heads over {pairs} rotated pairs \
         needs axes in 1..=4, at least one head and axes * heads * pairs values, got {values} \
         (a checkpoint's [axes, heads, head_dim / 2] weights, row-major)"
    )]
    InvalidLearnedTable {
        /// The table's axes.
        axes: u64,
        /// The table's heads.
        heads: u64,
        /// The rotated pairs (rotary_dim / 2).
        pairs: u64,
        /// The values given.
        values: u64,
    },
    /// The leading lanes and the rotated ones do not fit the head.
    #[error(
        "{leading_lanes} leading lanes (RopeSpec::leading_lanes) and rotary_dim {rotary_dim} \
         must fit head_dim {head_dim}: rotary_dim even and non-zero, leading_lanes + \
         rotary_dim at most head_dim (rotary_dim defaults to the lanes after the leading ones)"
    )]
    InvalidLeadingLanes {
        /// The leading lanes given.
        leading_lanes: u64,
        /// The rotary dimension (given, or the lanes left after the leading ones).
        rotary_dim: u64,
        /// The tensor's head dimension.
        head_dim: u64,
    },
    /// [`OutputOrder::PairHalves`](crate::OutputOrder::PairHalves) with half-split pairs.
    #[error(
        "OutputOrder::PairHalves reorders interleaved pairs; half-split pairs are already in \
         that order: use OutputOrder::Pairs, or PairLayout::Interleaved"
    )]
    PairHalvesNeedInterleaved,
    /// [`OutputOrder::PairHalves`](crate::OutputOrder::PairHalves) where a rotated tensor is
    /// written in place.
    #[error(
        "OutputOrder::PairHalves moves elements between the lanes of a row, which an in-place \
         rotation cannot do: give the rotation an output ({what})"
    )]
    PairHalvesInPlace {
        /// Which output to give.
        what: &'static str,
    },
    /// `d_model` of a sinusoidal encoding is below 2 or too large.
    #[error(
        "d_model {d_model} must be at least 2 and below 2^32: a row holds at least one sin and its cos"
    )]
    InvalidDModel {
        /// The value given.
        d_model: u64,
    },
    /// A numeric parameter (base, scale) is out of range.
    #[error("{what} {value} is invalid: {need}")]
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// The value given.
        value: f64,
        /// What it must be.
        need: &'static str,
    },
    /// M-RoPE sections that do not cover the rotary pairs.
    #[error(
        "mrope_section {section:?} (and {fourth} pairs on a fourth axis) must sum to \
         rotary_dim / 2 = {pairs}"
    )]
    InvalidMRopeSection {
        /// The sections given.
        section: [u64; 3],
        /// Pairs on a fourth axis ([`MRope::fourth`](crate::MRope::fourth)).
        fourth: u64,
        /// Pairs to cover.
        pairs: u64,
    },
    /// The kind of positions does not fit the spec or the view.
    #[error("{0}")]
    PositionsMismatch(&'static str),
    /// A position is past the end of a cos/sin cache.
    #[error(
        "position {position} is past the cos/sin cache of {max_pos} positions: enlarge the \
         cache or compute angles on the fly"
    )]
    PositionOutOfCache {
        /// The largest position asked for.
        position: u64,
        /// Rows in the cache.
        max_pos: u64,
    },
    /// A tensor the fused QKV call binds whole is larger than one storage binding.
    #[error(
        "{what} spans {bytes} bytes, more than one storage binding of {limit} bytes holds: \
         raise the device's max_storage_buffer_binding_size (PosEnc::request_device asks for \
         the adapter's own), or use a smaller cache per call"
    )]
    BindingTooSmall {
        /// What is bound.
        what: &'static str,
        /// Bytes it spans.
        bytes: u64,
        /// Bytes one binding may cover.
        limit: u64,
    },
    /// A KV cache too short for the positions a call writes.
    #[error(
        "the KV cache holds {len} positions per row and the call writes position {position}: \
         enlarge the cache, or give each token its slot (CacheIndex::Slots)"
    )]
    KvCacheTooShort {
        /// The largest position written.
        position: u64,
        /// Positions the cache holds.
        len: u64,
    },
    /// Two tensors of one call disagree on a dimension.
    #[error("{what}: shapes {a:?} and {b:?} must agree")]
    ShapeMismatch {
        /// What must agree.
        what: &'static str,
        /// The first shape.
        a: [u64; 4],
        /// The second shape.
        b: [u64; 4],
    },
    /// Two options that cannot be combined in one call.
    #[error("{0}")]
    Unsupported(&'static str),
    /// The spec and the tensor disagree on the row width.
    #[error("the spec has d_model {spec} but the tensor's rows have {tensor} elements")]
    DimMismatch {
        /// Width in the spec.
        spec: u64,
        /// Width of the tensor's last axis.
        tensor: u64,
    },
    /// The number of elements, or an element index, does not fit the indexing type.
    #[error(
        "shape {shape:?} with strides {strides:?} overflows {limit} indexing: the offset, \
         strides or shape are larger than any buffer can be (check them)"
    )]
    ShapeOverflow {
        /// The shape given.
        shape: [u64; 4],
        /// The strides given.
        strides: [u64; 3],
        /// `u64` on the host, `u32` within one binding.
        limit: &'static str,
    },
    /// Two rows of the view share elements, so an in-place kernel would race.
    #[error(
        "strides {strides:?} make rows of shape {shape:?} overlap; each (batch, head, token) row \
         of head_dim elements must have memory of its own"
    )]
    OverlappingRows {
        /// The shape given.
        shape: [u64; 4],
        /// The strides given.
        strides: [u64; 3],
    },
    /// The buffer is smaller than the view (offset, shape, strides) needs.
    #[error(
        "{what} needs {needed} bytes (offset + shape and strides) but the buffer has {size}: \
         allocate a larger buffer or fix the shape"
    )]
    BufferTooSmall {
        /// Which buffer.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes present.
        size: u64,
    },
    /// The buffer lacks a usage flag the kernel needs.
    #[error("{what} lacks buffer usage {missing:?}: create it with that flag")]
    MissingUsage {
        /// Which buffer.
        what: &'static str,
        /// The flags it lacks.
        missing: wgpu::BufferUsages,
    },
    /// A byte offset is not a multiple of the element size.
    #[error("{what} offset {offset} bytes is not a multiple of the element size {elem} bytes")]
    MisalignedOffset {
        /// Which buffer.
        what: &'static str,
        /// The offset given.
        offset: u64,
        /// The element size.
        elem: u64,
    },
    /// Contiguous positions run past `u32::MAX`.
    #[error(
        "positions start {start} + seq {seq} run past u32::MAX: use a smaller start or \
         explicit position ids"
    )]
    PositionOverflow {
        /// First position.
        start: u64,
        /// Number of tokens.
        seq: u64,
    },
    /// A position buffer or slice (ids, starts, `cu_seqlens`, offsets) is too short.
    #[error("{what}: {needed} values needed but {available} given")]
    PositionIdsTooShort {
        /// Which positions.
        what: &'static str,
        /// Ids needed.
        needed: u64,
        /// Ids present.
        available: u64,
    },
    /// A host slice has the wrong length for the shape.
    #[error("host data has {got} elements but the layout needs {needed}")]
    HostLength {
        /// Elements the layout spans.
        needed: u64,
        /// Elements given.
        got: u64,
    },
    /// The device lacks a feature the request needs.
    #[error("{what} needs the device feature {feature:?}, which {adapter} does not have{hint}")]
    MissingFeature {
        /// What was asked.
        what: &'static str,
        /// The feature.
        feature: wgpu::Features,
        /// The adapter's name.
        adapter: String,
        /// How to get it.
        hint: &'static str,
    },
    /// A frequency-scaling configuration is invalid.
    #[error(transparent)]
    Frequency(#[from] FrequencyError),
    /// Two views of one call (Q and K, or source and destination out of place) share
    /// elements, so one would be rotated twice or read after it was written.
    #[error(
        "{what} share memory: {first} (at element offset {}) and {second} (at element offset \
         {}) have elements in common in one buffer; give each its own elements",
        offsets[0], offsets[1]
    )]
    TensorsOverlap {
        /// Which call.
        what: &'static str,
        /// The first view's role.
        first: &'static str,
        /// The second view's role.
        second: &'static str,
        /// The element offsets of the two views.
        offsets: [u64; 2],
    },
    /// Two views of one buffer whose elements could not be proven disjoint in bounded time.
    #[error(
        "{what}: {first} and {second} lie in one buffer with strides too irregular to check \
         that they share no element; put them in separate buffers"
    )]
    OverlapUnknown {
        /// Which call.
        what: &'static str,
        /// The first view's role.
        first: &'static str,
        /// The second view's role.
        second: &'static str,
    },
    /// Two bindings of one dispatch would break WebGPU's rules for one buffer.
    #[error(
        "{first} and {second} are in one buffer {}; WebGPU implementations (Dawn in Chrome, \
         browsers) reject such a dispatch: put them in separate buffers, or far enough apart \
         that their binding windows (offsets aligned down to the device's storage offset \
         alignment) do not meet",
        if *both_writable { "with overlapping writable windows" } else { "bound both writable and read-only" }
    )]
    BindingConflict {
        /// What the first binding holds.
        first: &'static str,
        /// What the second binding holds.
        second: &'static str,
        /// Both are writable (else one is read-only).
        both_writable: bool,
    },
    /// A binding window breaks the device's alignment or size rules (a bug of this crate if
    /// it ever happens: please report it with the call that caused it).
    #[error(
        "binding {binding}: window at offset {offset} of {size} bytes does not fit the \
         device's alignment and size rules (buffer of {buffer_size} bytes)"
    )]
    InvalidBinding {
        /// The binding index.
        binding: u32,
        /// Byte offset.
        offset: u64,
        /// Byte size.
        size: u64,
        /// The buffer's size.
        buffer_size: u64,
    },
    /// A model's layers do not all rotate alike (per-layer-type RoPE, or layers without).
    #[error(
        "{model_type} has layers that rotate differently ({layer_types}): take each layer's \
         spec from HfRope::from_config(config)?.layer(i)"
    )]
    PerLayerRope {
        /// The model type.
        model_type: String,
        /// Its layer types, comma-separated.
        layer_types: String,
    },
    /// The caller's head dimension is not the model's.
    #[error(
        "{model_type} rotates tensors of head_dim {config} (from its config.json), but \
         head_dim {given} was given; DeepSeek-V2/V3 rotate only the last qk_rope_head_dim \
         lanes of each head (q_pe): pass a view of those"
    )]
    HeadDimMismatch {
        /// The model type.
        model_type: String,
        /// The config's head dimension.
        config: u64,
        /// The one given.
        given: u64,
    },
    /// A length-dependent scaling with positions only on the GPU.
    #[error(
        "{scaling} scaling depends on the sequence length (HF: the largest position of the \
         call + 1), which the host cannot see with positions on the GPU: set \
         RopeSpec::scaling_seq_len (e.g. the KV cache length after this step), or pass host \
         positions to rope_host"
    )]
    ScalingSeqLenNeeded {
        /// The scaling type.
        scaling: &'static str,
    },
    /// The device lacks a limit the kernels need.
    #[error(
        "the device's {limit} is {got}, but the kernels need at least {needed}: request it \
         when creating the device (wgpu::Limits {{ {limit}: {needed}, .. }}, or \
         PosEnc::request_device, which asks for the adapter's limits); WebGPU's default \
         limits are enough, wgpu::Limits::downlevel_defaults() is not"
    )]
    DeviceLimit {
        /// The limit's name in `wgpu::Limits`.
        limit: &'static str,
        /// The value the kernels need.
        needed: u64,
        /// The device's value.
        got: u64,
    },
    /// A buffer would exceed the device's `max_buffer_size`.
    #[error(
        "{what} needs a buffer of {bytes} bytes, above the device's max_buffer_size of \
         {limit}: process the data in parts, or request a larger limit"
    )]
    BufferLimit {
        /// Which buffer.
        what: &'static str,
        /// Bytes needed.
        bytes: u64,
        /// The device's limit.
        limit: u64,
    },
    /// The device reported an error (validation or out of memory) for something the crate
    /// created.
    #[error("{what}: the device reported: {message}")]
    Device {
        /// What was being created.
        what: &'static str,
        /// The device's message.
        message: String,
    },
    /// Not even one row (one token of one head, or of all heads where a pass keeps them
    /// together) fits one storage binding, and a row cannot be split.
    #[error(
        "one row of the view spans {row_bytes} bytes, more than one storage binding of \
         {limit} bytes can hold, and a single row cannot be split across bindings: raise the \
         device's max_storage_buffer_binding_size (PosEnc::request_device asks for the \
         adapter's own), or lift PosEnc::with_max_binding_size"
    )]
    RowTooLarge {
        /// Bytes one row spans.
        row_bytes: u64,
        /// Bytes one binding may cover.
        limit: u64,
    },
    /// Two views of one buffer (Q and K, or source and output) may share one binding, so
    /// each is planned within half of it, and one row does not fit half.
    #[error(
        "two views of one buffer share one binding here, so each view's blocks get half of the \
         {limit}-byte binding, and one {row_bytes}-byte row (with its alignment) does not fit \
         half: lift PosEnc::with_max_binding_size (or the device's \
         max_storage_buffer_binding_size) to at least {need} bytes, or put the second view \
         in a buffer of its own"
    )]
    SharedRowTooLarge {
        /// Bytes one row spans.
        row_bytes: u64,
        /// Bytes one binding may cover.
        limit: u64,
        /// The binding size that would do.
        need: u64,
    },
    /// Mapping a buffer for readback failed.
    #[error("reading back from the device failed: {0}")]
    Map(#[from] wgpu::BufferAsyncError),
    /// A mapped range could not be read.
    #[error("reading a mapped buffer failed: {0}")]
    MapRange(#[from] wgpu::MapRangeError),
    /// Waiting for the device failed.
    #[error("waiting for the device failed: {0}")]
    Poll(#[from] wgpu::PollError),
}

/// Short for `Result<T, wgpu_posenc::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use crate::frequencies::error::FrequencyError;
