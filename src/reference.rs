//! The scalar CPU reference, in f64: the oracle every GPU result is tested against.
//!
//! Written to be obviously correct rather than fast: plain loops over the same
//! `[batch, heads, seq, dim]` layouts, the same pair layouts and options, and an exact angle
//! reduction of its own (Cody-Waite in f64 with fused multiply-add, unlike the shaders'
//! 64-bit fixed-point revolutions), so the two agree only if both are right.

use crate::error::Result;
use crate::frequencies::Scaling;
use crate::positions::HostPositions;
use crate::sinusoid::{SinusoidalSpec, Timescales};
use crate::spec::{PairLayout, RopeSpec};
use crate::tensor::Layout;

mod pair_angles;

/// 2 pi as the sum of three f64 (the last one far below anything that matters here).
const TWO_PI_HI: f64 = std::f64::consts::TAU;
const TWO_PI_MID: f64 = 2.449_293_598_294_706_4e-16;
const TWO_PI_LO: f64 = -5.989_539_619_436_679e-33;

/// `(sin, cos)` of `position * freq` radians, with the product reduced exactly: accurate to
/// about 1e-15 for every u32 position, where forming `position * freq` in f64 alone would
/// be off by up to 5e-7 radians at position 2^32.
pub fn sincos(position: u32, freq: f64) -> (f64, f64) {
    sincos_exact(position, freq, 0.0)
}

/// `(sin, cos)` of `position * (freq + freq_lo)` radians, the frequency given as an
/// unevaluated sum (double-double, as [`inv_freq_exact`] returns it), reduced as in
/// [`sincos`]: within about 1e-15 of the real-number value at every u32 position.
pub fn sincos_exact(position: u32, freq: f64, freq_lo: f64) -> (f64, f64) {
    sincos_at(f64::from(position), freq, freq_lo)
}

/// [`sincos_exact`] at any position of at most 53 significant bits (every u32 and every
/// f32, negative ones included): within about 1e-12 of the real-number value while
/// `|position * freq| < 2^60`.
pub fn sincos_at(position: f64, freq: f64, freq_lo: f64) -> (f64, f64) {
    let p = position;
    // a + b == p * freq exactly; c = p * freq_lo (below 2^-52 |a|: its rounding is far below
    // anything that matters).
    let a = p * freq;
    let b = p.mul_add(freq, -a);
    let c = p * freq_lo;
    // a - k 2pi, one rounding per step.
    let k = (a / TWO_PI_HI).round();
    let r = (-k).mul_add(TWO_PI_HI, a);
    let r = (-k).mul_add(TWO_PI_MID, r);
    let r = r + ((b + c) - k * TWO_PI_LO);
    r.sin_cos()
}

/// [`sincos_at`] of `position * (turns + turns_lo)` revolutions (a frequency in revolutions
/// per position, [`FrequencyUnit::Revolutions`](crate::FrequencyUnit::Revolutions)): the
/// product's whole revolutions dropped exactly in f64 (`a - round(a)` is exact), then the
/// fraction times 2 pi; within about 1e-15 of the real-number value while
/// `|position * turns| < 2^60`.
pub fn sincos_turns_at(position: f64, turns: f64, turns_lo: f64) -> (f64, f64) {
    let a = position * turns;
    let b = position.mul_add(turns, -a);
    let c = position * turns_lo;
    let t = (a - a.round()) + (b + c);
    (TWO_PI_HI * t + TWO_PI_MID * t).sin_cos()
}

/// `base^(-2j/dim)` for `j` in `0..dim/2` as double-double `(hi, lo)` pairs: each power
/// on its own, `exp(-(2j/dim) ln(base))` (the kernels' host builders take successive
/// products instead).
pub fn inv_freq_exact(dim: u64, base: f64) -> Vec<(f64, f64)> {
    let l = crate::dd::Dd::from_f64(base).ln();
    (0..dim / 2)
        .map(|j| {
            let f = crate::dd::exp_neg_ratio(l, 2 * j, dim);
            (f.hi, f.lo)
        })
        .collect()
}

/// Unscaled RoPE / sinusoidal frequencies `base^(-2j/dim)`, `j` in `0..dim/2`.
pub fn inv_freq(dim: u64, base: f64) -> Vec<f64> {
    (0..dim / 2)
        .map(|j| base.powf(-((2 * j) as f64) / dim as f64))
        .collect()
}

/// Index of element `(b, h, s, 0)`.
///
/// Saturates at `u64::MAX` (for rows of views that [`Layout::end`] refuses).
pub fn row_start(layout: &Layout, b: u64, h: u64, s: u64) -> u64 {
    [b, h, s]
        .iter()
        .zip(layout.strides)
        .fold(layout.offset, |acc, (&i, st)| {
            acc.saturating_add(i.saturating_mul(st))
        })
}

/// A cos/sin cache `[max_pos, ...]` on the host: row `p` holds the cos (at `cos_offset`)
/// and sin (at `sin_offset`) of pair `j` of position `p` at `p * row_stride + offset + j`.
#[derive(Clone, Copy, Debug)]
pub struct HostCache<'a> {
    /// Cache values.
    pub values: &'a [f32],
    /// Rows.
    pub max_pos: u64,
    /// Elements between rows.
    pub row_stride: u64,
    /// Index of the first cos in a row.
    pub cos_offset: u64,
    /// Index of the first sin in a row.
    pub sin_offset: u64,
}

/// Where the model's table is laid out for the other pair layout
/// ([`RopeSpec::table_layout`]), the pair whose angle lane `lane` of the rotated lanes `r`
/// takes: the pair at its place in that table, block by block (`[t0, t0, t1, t1, ..]`
/// interleaved, `[t0, t1, .., t0, t1, ..]` half-split); `None`: its own pair's.
fn table_pair(spec: &RopeSpec, r: u64, lane: u64) -> Option<usize> {
    let table = spec.table_layout.filter(|&t| t != spec.pair_layout)?;
    let per_block = (r / 2) / spec.pair_blocks.max(1);
    let (block, at) = (lane / (2 * per_block), lane % (2 * per_block));
    let place = match table {
        PairLayout::Interleaved => at / 2,
        PairLayout::HalfSplit => at % per_block,
    };
    Some((block * per_block + place) as usize)
}

/// RoPE in place over `x` (every option of [`RopeSpec`]); panics on a malformed spec or
/// short slice, as a test oracle should.
pub fn rope(spec: &RopeSpec, layout: &Layout, x: &mut [f64], positions: HostPositions<'_>) {
    let src = x.to_vec();
    rope_out(spec, layout, &src, layout, x, positions, None);
}

/// RoPE from `src` (laid out as `src_layout`) into `dst` (`dst_layout`, same shape): rotated
/// pairs, and the tail `[r, head_dim)` copied. With `cache`, the angles come from it.
pub fn rope_out(
    spec: &RopeSpec,
    src_layout: &Layout,
    src: &[f64],
    dst_layout: &Layout,
    dst: &mut [f64],
    positions: HostPositions<'_>,
    cache: Option<&HostCache<'_>>,
) {
    let [nb, nh, ns, d] = src_layout.shape;
    assert_eq!(src_layout.shape, dst_layout.shape);
    // The rotated lanes start after the leading ones, which are copied as they are.
    let lead = spec.leading_lanes as usize;
    let r = spec.rotary_dim.unwrap_or(d - spec.leading_lanes);
    // HF: the largest position of the call + 1.
    let axes_count = spec.position_planes();
    let seq_len = spec
        .scaling_seq_len
        .unwrap_or_else(|| positions.seq_len(src_layout, axes_count));
    let (freqs, factor) = frequencies_in_unit(spec, r, seq_len).expect("valid scaling");
    let axes = spec.pair_axes(r).expect("valid sections");
    let angles = pair_angles::PairAngles {
        spec,
        positions,
        cache,
        freqs: &freqs,
        factor,
        axes: &axes,
        nb,
        ns,
    };
    for b in 0..nb {
        for s in 0..ns {
            for h in 0..nh {
                let row = (
                    row_start(src_layout, b, h, s) as usize,
                    row_start(dst_layout, b, h, s) as usize,
                );
                dst[row.1..row.1 + lead].copy_from_slice(&src[row.0..row.0 + lead]);
                let (from, to) = (row.0 + lead, row.1 + lead);
                for j in 0..freqs.len() {
                    let (i0, i1) = spec.pair_elements(r, j as u64);
                    // Each element at the angle of its lane's place in the model's table.
                    let (sin, cos) = angles.sincos(table_pair(spec, r, i0).unwrap_or(j), h, b, s);
                    let (sin1, cos1) = angles.sincos(table_pair(spec, r, i1).unwrap_or(j), h, b, s);
                    let (x0, x1) = (src[from + i0 as usize], src[from + i1 as usize]);
                    // Each element to the lane the output order gives it.
                    let (o0, o1) = (
                        spec.output_order.lane(r, i0) as usize,
                        spec.output_order.lane(r, i1) as usize,
                    );
                    dst[to + o0] = x0 * cos - x1 * sin;
                    dst[to + o1] = x0 * sin1 + x1 * cos1;
                }
                let tail = r as usize..d as usize - lead;
                dst[to + tail.start..to + tail.end]
                    .copy_from_slice(&src[from + tail.start..from + tail.end]);
            }
        }
    }
}

/// `v` rounded to bf16 (8 significant bits), to nearest even.
pub fn bf16_round(v: f64) -> f64 {
    let bits = v.to_bits();
    let rounded = bits + (1 << 44) - 1 + ((bits >> 45) & 1);
    f64::from_bits(rounded & !((1u64 << 45) - 1))
}

/// The frequencies and attention factor of a RoPE spec: the default computed here, scaled
/// ones from the host builders (which are tested against published values on their own).
/// Each frequency is an unevaluated sum `(hi, lo)` in radians per position (those of a
/// spec in revolutions times 2 pi).
pub fn frequencies(spec: &RopeSpec, r: u64, seq_len: u64) -> Result<(Vec<(f64, f64)>, f64)> {
    let (f, factor) = frequencies_in_unit(spec, r, seq_len)?;
    if spec.frequency_unit == crate::FrequencyUnit::Radians {
        return Ok((f, factor));
    }
    // (hi + lo) 2 pi: the exact product of hi and 2 pi's first part, the rest added.
    let rad = f.into_iter().map(|(hi, lo)| {
        let p = hi * TWO_PI_HI;
        let e = hi.mul_add(TWO_PI_HI, -p) + (hi * TWO_PI_MID + lo * TWO_PI_HI);
        let s = p + e;
        (s, e - (s - p))
    });
    Ok((rad.collect(), factor))
}

/// [`frequencies`] in the spec's unit.
fn frequencies_in_unit(spec: &RopeSpec, r: u64, seq_len: u64) -> Result<(Vec<(f64, f64)>, f64)> {
    if let Some(m) = spec.mrope.filter(|m| m.frequencies.per_axis()) {
        // One list per axis, each of its own width; the k-th pair of an axis in the row
        // takes entry k of its axis's list.
        let lists: Vec<Vec<(f64, f64)>> = m
            .section
            .iter()
            .chain([&m.fourth])
            .enumerate()
            .map(|(a, &n)| {
                let base = spec.axis_bases.map_or(spec.base, |b| b[a]);
                match m.frequencies {
                    crate::AxisFrequencies::Rising => rising(n, base),
                    _ => inv_freq_exact(2 * n, base),
                }
            })
            .collect();
        let axes = m.axes(r / 2)?;
        let picked = axes.iter().enumerate().map(|(j, &a)| {
            let k = axes[..j].iter().filter(|&&x| x == a).count();
            lists[a as usize][k]
        });
        return Ok((picked.collect(), 1.0));
    }
    if let Some(m) = spec
        .mrope
        .filter(|m| m.frequencies == crate::AxisFrequencies::Dealt)
    {
        let shared = inv_freq_exact(r, spec.base);
        let axes = m.axes(r / 2)?;
        return Ok((dealt(&axes).into_iter().map(|i| shared[i]).collect(), 1.0));
    }
    match spec.scaling {
        Scaling::Default => Ok((inv_freq_exact(r, spec.base), 1.0)),
        ref scaling => {
            let f = scaling.frequencies(r as u32, spec.base, seq_len)?;
            let pairs = f.inv_freq.into_iter().zip(f.inv_freq_lo).collect();
            Ok((pairs, f.attention_factor))
        }
    }
}

/// LTX's `n` frequencies rising from `pi/2`: `(pi/2) base^(k/(n-1))` as `exp(ln(base) k /
/// (n-1)) pi/2` in double-double, `pi/2` alone for `n = 1`.
fn rising(n: u64, base: f64) -> Vec<(f64, f64)> {
    let l = crate::dd::Dd::from_f64(base).ln();
    let half_pi = crate::dd::Dd {
        hi: std::f64::consts::FRAC_PI_2,
        lo: 6.123_233_995_736_766e-17,
    };
    (0..n)
        .map(|k| {
            let e = crate::dd::Dd::from_f64(k as f64)
                .div(crate::dd::Dd::from_f64((n.max(2) - 1) as f64));
            let f = l.mul(e).exp().mul(half_pi);
            (f.hi, f.lo)
        })
        .collect()
}

/// The shared-list index of each pair of dealt frequencies: the `k`-th pair of an axis takes
/// the `k`-th card that axis is dealt, cards `0, 1, 2, ..` going round the axes that still
/// have pairs to fill.
fn dealt(axes: &[u32]) -> Vec<usize> {
    let need: Vec<usize> = (0..4u32)
        .map(|a| axes.iter().filter(|&&x| x == a).count())
        .collect();
    axes.iter()
        .enumerate()
        .map(|(j, &a)| {
            let k = axes[..j].iter().filter(|&&x| x == a).count();
            // Deal until axis `a` receives its `k`-th card.
            let (mut got, mut card) = ([0usize; 4], 0);
            loop {
                for b in 0..4u32 {
                    if got[b as usize] < need[b as usize] {
                        if b == a && got[b as usize] == k {
                            return card;
                        }
                        got[b as usize] += 1;
                        card += 1;
                    }
                }
            }
        })
        .collect()
}

/// The frequencies of a sinusoidal spec as `(hi, lo)` pairs: the RoPE ones of its base and
/// diffusers' shifted form computed here (each power on its own), the timescale ones of the
/// spec; times the frequency scale.
fn sinusoidal_frequencies(spec: &SinusoidalSpec) -> Vec<(f64, f64)> {
    use crate::dd::Dd;
    let n = spec.pairs();
    let unscaled: Vec<Dd> = match spec.timescales {
        None => inv_freq_exact(spec.d_model, spec.base)
            .into_iter()
            .map(|(hi, lo)| Dd { hi, lo })
            .collect(),
        Some(Timescales::Shifted { max_period, shift }) => {
            let steps = Dd::from_f64(n as f64).sub(Dd::from_f64(shift));
            let l = Dd::from_f64(max_period).ln();
            (0..n)
                .map(|i| l.mul_f64(i as f64).div(steps).neg().exp())
                .collect()
        }
        Some(_) => {
            let unit = SinusoidalSpec {
                freq_scale: 1.0,
                ..*spec
            };
            unit.frequencies_dd()
        }
    };
    let scale = Dd::from_f64(spec.freq_scale);
    unscaled
        .into_iter()
        .map(|w| w.mul(scale))
        .map(|w| (w.hi, w.lo))
        .collect()
}

/// The sinusoidal row of position `p`: `d_model` values in the spec's layout (zeros for
/// the padding index; an odd width ends with a zero).
pub fn sinusoidal_row(spec: &SinusoidalSpec, p: u32) -> Vec<f64> {
    row_of(
        spec,
        &sinusoidal_frequencies(spec),
        f64::from(p),
        spec.padding_idx == Some(p),
    )
}

/// The sinusoidal row of an f32 position (a diffusion timestep, a coordinate).
pub fn sinusoidal_row_at(spec: &SinusoidalSpec, p: f32) -> Vec<f64> {
    row_of(spec, &sinusoidal_frequencies(spec), f64::from(p), false)
}

fn row_of(spec: &SinusoidalSpec, freqs: &[(f64, f64)], p: f64, padding: bool) -> Vec<f64> {
    let mut row = vec![0.0; spec.d_model as usize];
    if padding {
        return row;
    }
    for (i, &(w, w_lo)) in freqs.iter().enumerate() {
        let (sin, cos) = sincos_at(p, w, w_lo);
        let (i_sin, i_cos) = spec.slots(i as u64);
        row[i_sin as usize] = sin;
        row[i_cos as usize] = cos;
    }
    row
}

/// The row of token `(b, s)`: at its position, zero for the padding index.
fn token_row(
    spec: &SinusoidalSpec,
    freqs: &[(f64, f64)],
    positions: &HostPositions<'_>,
    [nb, ns, b, s]: [u64; 4],
) -> Vec<f64> {
    let p = positions
        .value(nb, ns, b, s, 0)
        .expect("host positions hold every position of the view");
    let padding =
        !matches!(positions, HostPositions::Float(_)) && spec.padding_idx.map(f64::from) == Some(p);
    row_of(spec, freqs, p, padding)
}

/// The table `[seq, d_model]` for positions `start..start + seq`.
///
/// Positions stop at `u32::MAX`: the table has `min(seq, 2^32 - start)` rows.
pub fn sinusoidal_table(spec: &SinusoidalSpec, seq: u64, start: u32) -> Vec<f64> {
    let freqs = sinusoidal_frequencies(spec);
    let rows = seq.min(u64::from(u32::MAX - start) + 1);
    (0..rows)
        .flat_map(|s| {
            let p = start + s as u32;
            row_of(spec, &freqs, f64::from(p), spec.padding_idx == Some(p))
        })
        .collect()
}

/// The table written into the rows of `layout` in `out`: row `(b, h, s)` gets the encoding
/// of token `(b, s)`'s position (u32 or f32). Elements outside the rows are left alone.
pub fn sinusoidal_table_at(
    spec: &SinusoidalSpec,
    layout: &Layout,
    out: &mut [f64],
    positions: HostPositions<'_>,
) {
    for_rows(spec, layout, positions, |row, pe| {
        out[row..row + pe.len()].copy_from_slice(pe);
    });
}

/// `x = x * scale + PE` over the rows of `layout`, token `(b, s)` at its position.
pub fn sinusoidal_add(
    spec: &SinusoidalSpec,
    layout: &Layout,
    x: &mut [f64],
    positions: HostPositions<'_>,
    scale: f64,
) {
    for_rows(spec, layout, positions, |row, pe| {
        for (k, v) in pe.iter().enumerate() {
            x[row + k] = x[row + k] * scale + v;
        }
    });
}

/// The table of a [`crate::SincosGrid`], `[grid.rows(), grid.dim]`: zero rows, then each
/// grid token's row: every block's sines and cosines of its coordinate in their columns.
pub fn sincos_grid(grid: &crate::SincosGrid) -> Vec<f64> {
    let dim = grid.dim as usize;
    let mut out = vec![0.0; grid.rows() as usize * dim];
    for b in &grid.blocks {
        let freqs = sinusoidal_frequencies(&b.spec());
        for (n, &c) in b.coords.iter().enumerate() {
            let row = &mut out[(grid.zero_rows as usize + n) * dim..];
            for (k, &(w, w_lo)) in freqs.iter().enumerate() {
                let (sin, cos) = sincos_at(f64::from(c), w, w_lo);
                row[(b.first + k as u64) as usize] = sin;
                row[(b.first + b.cos_offset + k as u64) as usize] = cos;
            }
        }
    }
    out
}

/// `f(index of the row's first element, its encoding)` for every row of `layout`.
fn for_rows(
    spec: &SinusoidalSpec,
    layout: &Layout,
    positions: HostPositions<'_>,
    mut f: impl FnMut(usize, &[f64]),
) {
    let [nb, nh, ns, _] = layout.shape;
    if nh == 0 {
        return; // no rows, and no positions read
    }
    let freqs = sinusoidal_frequencies(spec);
    for s in 0..ns {
        for b in 0..nb {
            let pe = token_row(spec, &freqs, &positions, [nb, ns, b, s]);
            for h in 0..nh {
                f(row_start(layout, b, h, s) as usize, &pe);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sincos_matches_the_naive_product_where_it_is_exact() {
        // Powers of two times small frequencies: p * f is exact in f64, so the naive
        // product is the truth; the reduction must agree.
        for &(p, f) in &[
            (1u32 << 31, 0.5),
            (12_345, 1.0),
            (1 << 20, 0.015_625),
            (3, 2.5),
        ] {
            let (s, c) = sincos(p, f);
            let a = f64::from(p) * f;
            // Reduce the (exact) angle with a slow but exact method: subtract 2pi in steps
            // through the same split constant would be circular, so use the identity
            // sin(a) = sin(a mod 2pi) only where a is small enough for std to be exact.
            if a < 1e6 {
                assert!((s - a.sin()).abs() < 1e-9, "sin {p} {f}");
                assert!((c - a.cos()).abs() < 1e-9, "cos {p} {f}");
            }
            assert!((s * s + c * c - 1.0).abs() < 1e-14);
        }
    }

    #[test]
    fn sincos_is_periodic_in_exact_revolutions() {
        // freq = 2pi / 2^k in f64 is not exact, but p * freq for p = m * 2^k is m * 2pi up to
        // the rounding of freq, which the reduction must carry: compare to the f64 value of
        // that rounding, computed with the exact product.
        let f = TWO_PI_HI / 1024.0;
        let (s, c) = sincos(1024 * 1000, f);
        // p * f = 1000 * TWO_PI_HI exactly; minus 1000 * 2pi = -1000 * TWO_PI_MID.
        let expected = -1000.0 * TWO_PI_MID;
        assert!((s - expected).abs() < 1e-20, "{s} vs {expected}");
        assert!((c - 1.0).abs() < 1e-15);
    }
}

/// Where the fused call puts a token's K and V rows in the cache (see
/// [`crate::CacheIndex`]).
#[derive(Clone, Copy, Debug)]
pub enum HostCacheIndex<'a> {
    /// At its position (axis 0 for M-RoPE) in its batch row.
    Position,
    /// At its slot, `[batch, seq]` row-major; negative: not cached.
    Slots(&'a [i32]),
}

/// The fused QKV call ([`crate::QkvCall`]) on host slices: from `qkv` (laid out as
/// `qkv_layout`, `[batch, q_heads + 2 kv_heads, seq, d]`), Q rotated into `q_out` (its
/// layout and data) or in place in `qkv`, K rotated and V copied into `k_cache` and
/// `v_cache` (both laid out as `cache_layout`) at each token's position or slot; tokens whose
/// position or slot is past the cache, or whose slot is negative, are not cached. With
/// `norm`, each Q and K head is first divided by its root mean square (plus eps) and
/// multiplied by its factors. Panics on a malformed call, as a test oracle should.
#[allow(clippy::too_many_arguments)]
pub fn qkv_cache(
    spec: &RopeSpec,
    qkv_layout: &Layout,
    qkv: &mut [f64],
    kv_heads: u64,
    positions: HostPositions<'_>,
    q_out: Option<(&Layout, &mut [f64])>,
    (k_layout, k_cache): (&Layout, &mut [f64]),
    (v_layout, v_cache): (&Layout, &mut [f64]),
    index: HostCacheIndex<'_>,
    norm: Option<&crate::spec::QkNorm>,
) {
    let [nb, heads, ns, d] = qkv_layout.shape;
    let q_heads = heads - 2 * kv_heads;
    let mut src = qkv.to_vec();
    if let Some(norm) = norm {
        normalize_heads(norm, qkv_layout, &mut src, q_heads, kv_heads);
    }
    // The Q, K and V heads of qkv as views of their own.
    let part = |first: u64, count: u64| {
        let mut l = *qkv_layout;
        l.offset += first * l.strides[1];
        l.shape[1] = count;
        l
    };
    let q = part(0, q_heads);
    match q_out {
        Some((layout, out)) => rope_out(spec, &q, &src, layout, out, positions, None),
        None => rope_out(spec, &q, &src, &q, qkv, positions, None),
    }
    let rotated_layout = Layout::bhsd([nb, kv_heads, ns, d]);
    let mut rotated = vec![0.0; (nb * kv_heads * ns * d) as usize];
    let k = part(q_heads, kv_heads);
    rope_out(
        spec,
        &k,
        &src,
        &rotated_layout,
        &mut rotated,
        positions,
        None,
    );
    let v = part(q_heads + kv_heads, kv_heads);
    for b in 0..nb {
        for s in 0..ns {
            let (cache_b, at) = match index {
                HostCacheIndex::Position => (b, positions.position(nb, ns, b, s, 0).map(u64::from)),
                HostCacheIndex::Slots(slots) => {
                    (0, u64::try_from(slots[(b * ns + s) as usize]).ok())
                }
            };
            let Some(at) = at.filter(|&at| at < k_layout.shape[2]) else {
                continue;
            };
            for h in 0..kv_heads {
                let (to_k, to_v) = (
                    row_start(k_layout, cache_b, h, at) as usize,
                    row_start(v_layout, cache_b, h, at) as usize,
                );
                let from_k = row_start(&rotated_layout, b, h, s) as usize;
                let from_v = row_start(&v, b, h, s) as usize;
                let d = d as usize;
                k_cache[to_k..to_k + d].copy_from_slice(&rotated[from_k..from_k + d]);
                v_cache[to_v..to_v + d].copy_from_slice(&src[from_v..from_v + d]);
            }
        }
    }
}

/// Each Q and K head of `x` (laid out as `layout`, Q heads then KV heads) divided by its root
/// mean square plus eps and multiplied by its factors, in f64.
fn normalize_heads(
    norm: &crate::spec::QkNorm,
    layout: &Layout,
    x: &mut [f64],
    q_heads: u64,
    kv_heads: u64,
) {
    let [nb, _, ns, d] = layout.shape;
    // The factors in f64 (the kernel's are rounded to f32, as HF computes them).
    let factors = [&norm.q_weight, &norm.k_weight].map(|w| {
        w.iter()
            .map(|&w| match norm.weight {
                crate::spec::NormWeight::Scale => f64::from(w),
                crate::spec::NormWeight::OnePlus => 1.0 + f64::from(w),
            })
            .collect::<Vec<f64>>()
    });
    for b in 0..nb {
        for h in 0..q_heads + kv_heads {
            let w = &factors[usize::from(h >= q_heads)];
            for s in 0..ns {
                let at = row_start(layout, b, h, s) as usize;
                let row = &mut x[at..at + d as usize];
                let mean_square = row.iter().map(|x| x * x).sum::<f64>() / d as f64;
                let inv = 1.0 / (mean_square + f64::from(norm.eps)).sqrt();
                for (x, &w) in row.iter_mut().zip(w) {
                    *x *= inv * w;
                }
            }
        }
    }
}
