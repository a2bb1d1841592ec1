//! `Rotary`, the burn module that stands in for burn's `nn::RotaryEncoding`: against burn's
//! own module where its f32 angles hold (positions below a few hundred), against the
//! crate's f64 reference everywhere (positions to 2^31, scalings, half-split pairs, a layer
//! read from an HF config), inside a burn model's stream of operations, and bad calls as
//! errors.

mod common;

use burn::nn::RotaryEncodingConfig;
use common::{Rng, bridge, max_diff, read, rope_reference, tensor};
use wgpu_posenc::{HfRope, HostPositions, PairLayout, RopeSpec, Scaling};
use wgpu_posenc_burn::{Error, Rotary};

/// burn's rotary (theta 10 000, pairs (2j, 2j + 1)) and the module, on the same tensor.
#[test]
fn agrees_with_burns_rotary_encoding() {
    let b = bridge();
    let mut rng = Rng(21);
    let shape = [2, 4, 24, 64];
    let theirs = RotaryEncodingConfig::new(256, 64).init(b.device());
    let spec = RopeSpec::new().pair_layout(PairLayout::Interleaved);
    let ours = Rotary::new(b, &spec, 64).expect("rotary");
    for start in [0usize, 1, 100, 232] {
        let x = rng.values(shape.iter().product());
        let want = read(theirs.apply(tensor(x.clone(), shape), start));
        let got = read(ours.apply(tensor(x.clone(), shape), start).expect("apply"));
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        // burn's angles are f32 products p * theta_j: at p < 256 within a few ulps of 256.
        assert!(err < 1e-4, "start {start}: {err:e}");
        // And ours against the f64 reference, much closer.
        let reference = rope_reference(&spec, shape, &x, HostPositions::Start(start as u32));
        assert!(max_diff(&got, &reference) < 1e-6, "start {start}");
        if start == 0 {
            let fwd = read(ours.forward(tensor(x.clone(), shape)).expect("forward"));
            assert_eq!(fwd, got, "forward is apply at 0");
        }
    }
}

/// Where burn's f32 angles do not hold: the module against the reference at large starts,
/// with scalings and half-split pairs, Q and K in one call, and explicit ids.
#[test]
fn matches_the_reference_at_long_positions() {
    let b = bridge();
    let mut rng = Rng(22);
    let cases = [
        RopeSpec::new().base(500_000.0).scaling(Scaling::llama3()),
        RopeSpec::new()
            .base(1_000_000.0)
            .pair_layout(PairLayout::HalfSplit),
        RopeSpec::new().scaling(Scaling::Linear { factor: 8.0 }),
    ];
    let (q_shape, k_shape) = ([1, 8, 5, 128], [1, 2, 5, 128]);
    for (i, spec) in cases.iter().enumerate() {
        let rotary = Rotary::new(b, spec, 128).expect("rotary");
        let start = [131_071usize, 1 << 31, 7][i];
        let (xq, xk) = (
            rng.values(q_shape.iter().product()),
            rng.values(k_shape.iter().product()),
        );
        let (q, k) = rotary
            .apply_qk(
                tensor(xq.clone(), q_shape),
                tensor(xk.clone(), k_shape),
                start,
            )
            .expect("apply_qk");
        let at = HostPositions::Start(start as u32);
        assert!(
            max_diff(&read(q), &rope_reference(spec, q_shape, &xq, at)) < 1e-6,
            "{i}: Q"
        );
        assert!(
            max_diff(&read(k), &rope_reference(spec, k_shape, &xk, at)) < 1e-6,
            "{i}: K"
        );
        let ids: Vec<u32> = (0..5).map(|j| (j * 1_000_003 + 11) as u32).collect();
        let got = rotary
            .apply_ids(tensor(xq.clone(), q_shape), rotary.ids(&ids))
            .expect("apply_ids");
        let want = rope_reference(spec, q_shape, &xq, HostPositions::Ids(&ids));
        assert!(max_diff(&read(got), &want) < 1e-6, "{i}: ids");
    }
}

/// A Gemma 3 layer of each kind, read from a config.json as HF reads it: the sliding layers'
/// local base, the global layers' scaled one.
#[test]
fn a_layer_read_from_an_hf_config() {
    let b = bridge();
    let mut rng = Rng(23);
    let config = serde_json::json!({
        "model_type": "gemma3_text",
        "head_dim": 64,
        "num_hidden_layers": 4,
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                        "full_attention"],
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}
        }
    });
    let hf = HfRope::from_config(&config).expect("config");
    let shape = [1, 2, 6, 64];
    for layer in [0, 3] {
        let read_layer = hf.layer(layer).expect("a rotating layer");
        let rotary = Rotary::from_layer(b, read_layer).expect("rotary");
        let x = rng.values(shape.iter().product());
        let got = read(rotary.apply(tensor(x.clone(), shape), 90).expect("apply"));
        let want = rope_reference(&read_layer.spec, shape, &x, HostPositions::Start(90));
        assert!(max_diff(&got, &want) < 1e-6, "layer {layer}");
    }
    assert_ne!(hf.layer(0), hf.layer(3), "local and global layers differ");
}

#[test]
fn bad_calls_are_errors() {
    let b = bridge();
    let mut rng = Rng(24);
    let rotary = Rotary::new(b, &RopeSpec::new(), 32).expect("rotary");
    // A start whose tokens run past u32::MAX.
    let x = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    assert!(matches!(
        rotary.apply(x, u32::MAX as usize - 1),
        Err(Error::PosEnc(wgpu_posenc::Error::PositionOverflow { .. }))
    ));
    // Heads of another size.
    let x = tensor(rng.values(4 * 16), [1, 1, 4, 16]);
    assert!(matches!(
        rotary.forward(x),
        Err(Error::PosEnc(wgpu_posenc::Error::DimMismatch { .. }))
    ));
    // Too few ids.
    let x = tensor(rng.values(4 * 32), [1, 1, 4, 32]);
    assert!(matches!(
        rotary.apply_ids(x, rotary.ids(&[1, 2])),
        Err(Error::PosEnc(
            wgpu_posenc::Error::PositionIdsTooShort { .. }
        ))
    ));
    // A spec that cannot be prepared.
    assert!(Rotary::new(b, &RopeSpec::new().base(-1.0), 32).is_err());
}
