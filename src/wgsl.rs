//! The crate's exact RoPE angle as WGSL functions for your own kernels: an attention kernel
//! that rotates q and k as it loads them, a fused projection epilogue, anything that wants
//! RoPE without a pass of its own over memory.
//!
//! [`ROPE_FUNCTIONS`] is plain WGSL text to put in front of your shader's source, after its
//! directives ([`with_functions`] does that: a kernel that starts with `enable f16;`,
//! `requires ...;` or `diagnostic(...);` keeps them first, as WGSL requires). It holds the
//! functions below and only what they use; every name it declares (functions, structs,
//! aliases, constants, variables) starts with `posenc_`, so it sits beside yours:
//!
//! - `fn posenc_rope_cos_sin(p: u32, f: vec2<u32>) -> vec2<f32>`: `vec2(cos, sin)` of the
//!   angle of a pair with frequency words `f` at position `p`, within 1.5e-7 of the
//!   real-number value at every u32 position (the angle `p * F mod 2^64` is formed exactly
//!   in integers; no WGSL built-in sine or cosine is used);
//! - `fn posenc_rope_rotate(x: vec2<f32>, cs: vec2<f32>) -> vec2<f32>`: the pair `x`
//!   rotated by `cs`.
//!
//! [`rope_functions_with_binding`] adds the storage binding of the frequency words at the
//! group and binding you choose (below the device's `max_bind_groups` and
//! `max_bindings_per_bind_group`, 4 and 1000 under WebGPU's defaults;
//! [`rope_functions_for_device`] checks them) and `fn posenc_rope_pair_cos_sin(p: u32, j: u32) ->
//! vec2<f32>` for pair `j`. [`RopeSpec::angle_words`] computes the words on the host for
//! any spec (every scaling; the inverse rotation is in the words), with the attention factor
//! to multiply cos and sin by and the M-RoPE axis of each pair.
//!
//! Which elements form pair `j` is the spec's [`PairLayout`]: `(2j, 2j + 1)` interleaved,
//! `(j, j + r/2)` half-split, of the first `r` (rotary) lanes of a head.
//!
//! ```
//! use wgpu_posenc::{RopeSpec, wgsl};
//! // Your kernel: scores[i] = rope(q_i, i) . rope(k, 0) over one 64-wide head.
//! let kernel = r#"
//! @group(0) @binding(1) var<storage, read> q: array<vec2<f32>>;
//! @group(0) @binding(2) var<storage, read> k: array<vec2<f32>>;
//! @group(0) @binding(3) var<storage, read_write> scores: array<f32>;
//! @compute @workgroup_size(64)
//! fn main(@builtin(global_invocation_id) id: vec3<u32>) {
//!     var dot = 0.0;
//!     for (var j = 0u; j < 32u; j++) {
//!         let qr = posenc_rope_rotate(q[id.x * 32u + j], posenc_rope_pair_cos_sin(id.x, j));
//!         let kr = posenc_rope_rotate(k[j], posenc_rope_pair_cos_sin(0u, j));
//!         dot += qr.x * kr.x + qr.y * kr.y;
//!     }
//!     scores[id.x] = dot;
//! }
//! "#;
//! let source = wgsl::with_functions(&wgsl::rope_functions_with_binding(0, 0), kernel);
//! // Interleaved pairs, so that pair j is the vec2 at index j of a head.
//! let spec = RopeSpec::new().pair_layout(wgpu_posenc::PairLayout::Interleaved);
//! let words = spec.angle_words(64, 0)?;
//! assert_eq!(words.words.len(), 32);
//! // Upload `words.as_bytes()` to the buffer at @group(0) @binding(0), compile `source`
//! // (here: checked by naga, as wgpu's device.create_shader_module would).
//! let module = naga::front::wgsl::parse_str(&source).expect("valid WGSL");
//! naga::valid::Validator::new(Default::default(), Default::default())
//!     .validate(&module)
//!     .expect("valid module");
//! # Ok::<(), wgpu_posenc::Error>(())
//! ```

use crate::angle::fixed_revolutions;
use crate::error::{Error, Result};
use crate::kernels::composed::{EXPORT_ROPE, EXPORT_ROPE_BINDING};
use crate::kernels::rope::Angles;
#[cfg(doc)]
use crate::spec::PairLayout;
use crate::spec::RopeSpec;

/// The exported functions (`shaders/export/rope.wgsl` and `shaders/trig.wgsl`, every
/// declared name prefixed `posenc_`): no bindings, nothing else declared.
pub const ROPE_FUNCTIONS: &str = EXPORT_ROPE;

/// [`ROPE_FUNCTIONS`] with `var<storage, read> posenc_angle_words: array<vec2<u32>>` at
/// `@group(group) @binding(binding)` (bind [`AngleWords::as_bytes`] there) and
/// `posenc_rope_pair_cos_sin(p, j)`, which reads pair `j`'s words from it.
pub fn rope_functions_with_binding(group: u32, binding: u32) -> String {
    EXPORT_ROPE_BINDING.replacen(
        "@group(0) @binding(0)",
        &format!("@group({group}) @binding({binding})"),
        1,
    )
}

/// [`rope_functions_with_binding`] after checking `group` and `binding` against the
/// device's `max_bind_groups` and `max_bindings_per_bind_group` (past them
/// `create_shader_module` refuses the source): [`Error::DeviceLimit`] names the one to raise.
pub fn rope_functions_for_device(
    device: &wgpu::Device,
    group: u32,
    binding: u32,
) -> Result<String> {
    let limits = device.limits();
    for (limit, got, index) in [
        ("max_bind_groups", limits.max_bind_groups, group),
        (
            "max_bindings_per_bind_group",
            limits.max_bindings_per_bind_group,
            binding,
        ),
    ] {
        if index >= got {
            return Err(Error::DeviceLimit {
                limit,
                needed: u64::from(index) + 1,
                got: u64::from(got),
            });
        }
    }
    Ok(rope_functions_with_binding(group, binding))
}

/// `kernel` with `functions` (e.g. [`ROPE_FUNCTIONS`]) in front of its declarations: the
/// kernel's leading directives (`enable`, `requires`, `diagnostic`), which WGSL wants before
/// anything else, stay first.
pub fn with_functions(functions: &str, kernel: &str) -> String {
    let at = directives_end(kernel);
    let (directives, rest) = kernel.split_at(at);
    let mut out = String::with_capacity(kernel.len() + functions.len() + 2);
    out.push_str(directives);
    if !directives.is_empty() && !directives.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(functions);
    if !functions.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(rest);
    out
}

/// The byte index after the last leading directive of `source` (and the comments and
/// blank space among them): 0 when it has none.
fn directives_end(source: &str) -> usize {
    let mut at = 0;
    let mut end = 0;
    loop {
        let rest = &source[at..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            at += trimmed.find('\n').map_or(trimmed.len(), |n| n + 1);
            continue;
        }
        if trimmed.starts_with("/*") {
            match trimmed.find("*/") {
                Some(n) => at += n + 2,
                None => return end,
            }
            continue;
        }
        let word: String = trimmed
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !matches!(word.as_str(), "enable" | "requires" | "diagnostic") {
            return end;
        }
        match trimmed.find(';') {
            Some(n) => {
                at += n + 1;
                // The directive's line break goes with it.
                let rest = &source[at..];
                at += rest.len() - rest.trim_start_matches([' ', '\t', '\r']).len();
                if source[at..].starts_with('\n') {
                    at += 1;
                }
                end = at;
            }
            None => return end,
        }
    }
}

/// A spec's frequencies as the exported functions read them.
#[derive(Clone, Debug, PartialEq)]
pub struct AngleWords {
    /// Per pair, `[low, high]` words of `F = round(f / 2pi * 2^64)` revolutions per position
    /// (`2^64 - F` for the inverse rotation).
    pub words: Vec<[u32; 2]>,
    /// Per pair, its M-RoPE axis (0 temporal, 1 height, 2 width; all 0 without M-RoPE): the
    /// position to pass for that pair is the token's position on that axis.
    pub axes: Vec<u32>,
    /// Multiplies cos and sin (YaRN's and LongRoPE's attention factor; 1 for most
    /// scalings).
    pub attention_factor: f32,
}

impl AngleWords {
    /// The words as bytes, for a storage buffer of `array<vec2<u32>>`.
    pub fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.words)
    }
}

impl RopeSpec {
    /// The frequency words of this spec over tensors of `head_dim`, for the exported WGSL
    /// functions ([`crate::wgsl`]). `seq_len` is the sequence length length-dependent
    /// scalings (dynamic NTK, LongRoPE) see, HF's `max(position) + 1`, unless the spec sets
    /// [`RopeSpec::scaling_seq_len`]; the other scalings ignore it.
    pub fn angle_words(&self, head_dim: u64, seq_len: u64) -> Result<AngleWords> {
        let r = self.validate(head_dim)?;
        if self.learned.is_some() {
            return Err(Error::Unsupported(
                "angle words are one frequency a pair: a learned table (RopeSpec::learned) \
                 has one a pair, head and axis; rotate through encode_rope",
            ));
        }
        let axes = self.pair_axes(r)?;
        let seq_len = self.scaling_seq_len.unwrap_or(seq_len);
        let angles = Angles::of(self, r, head_dim, seq_len)?;
        let words = angles
            .inv_freq
            .iter()
            .map(|&f| {
                let fixed = fixed_revolutions(f);
                // -F revolutions: the angle -a, exactly.
                let fixed = if self.inverse {
                    fixed.wrapping_neg()
                } else {
                    fixed
                };
                [fixed as u32, (fixed >> 32) as u32]
            })
            .collect();
        Ok(AngleWords {
            words,
            axes,
            attention_factor: angles.attention_factor,
        })
    }
}
