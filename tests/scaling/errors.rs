//! Invalid scaling parameters and rotary dims, each an error (never a panic) whose message
//! says what to do.

use wgpu_posenc::{FrequencyError, Llama3, LongRope, Scaling, Yarn};

#[test]
fn bad_input_is_an_error_not_a_panic() {
    use FrequencyError as E;
    let ok = Scaling::Default;
    assert_eq!(
        ok.frequencies(0, 1e4, 0),
        Err(E::InvalidRotaryDim { rotary_dim: 0 })
    );
    assert_eq!(
        ok.frequencies(7, 1e4, 0),
        Err(E::InvalidRotaryDim { rotary_dim: 7 })
    );
    for base in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(ok.frequencies(8, base, 0), Err(E::InvalidBase { .. })),
            "{base}"
        );
    }
    for factor in [0.5, 0.0, -2.0, f64::NAN, f64::INFINITY] {
        let e = Scaling::Linear { factor }.frequencies(8, 1e4, 0);
        assert!(
            matches!(e, Err(E::InvalidFactor { name: "factor", .. })),
            "{factor}: {e:?}"
        );
        let e = Scaling::yarn(factor, 4096).frequencies(8, 1e4, 0);
        assert!(matches!(e, Err(E::InvalidFactor { .. })), "{factor}: {e:?}");
    }
    let e = Scaling::NtkAware { factor: 2.0 }.frequencies(2, 1e4, 0);
    assert_eq!(
        e,
        Err(E::RotaryDimTooSmall {
            scaling: "NTK-aware",
            rotary_dim: 2
        })
    );
    let dynamic = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 2048,
    };
    assert!(matches!(
        dynamic.frequencies(2, 1e4, 1),
        Err(E::RotaryDimTooSmall { .. })
    ));
    let zero = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 0,
    };
    assert!(matches!(
        zero.frequencies(8, 1e4, 1),
        Err(E::ZeroContextLength { .. })
    ));
    assert!(matches!(
        Scaling::yarn(4.0, 0).frequencies(8, 1e4, 0),
        Err(E::ZeroContextLength { .. })
    ));
    assert_eq!(
        Scaling::yarn(4.0, 4096).frequencies(8, 1.0, 0),
        Err(E::YarnBaseTooSmall { base: 1.0 })
    );

    let yarn = |beta_fast: f64, beta_slow: f64, mscale: f64, attention_factor: Option<f64>| {
        Scaling::Yarn(Yarn {
            factor: 4.0,
            original_max_position_embeddings: 4096,
            beta_fast,
            beta_slow,
            mscale,
            mscale_all_dim: 0.0,
            attention_factor,
            truncate: true,
        })
    };
    assert!(matches!(
        yarn(1.0, 32.0, 0.0, None).validate(),
        Err(E::BetaFastBelowBetaSlow { .. })
    ));
    assert!(matches!(
        yarn(0.0, 0.0, 0.0, None).validate(),
        Err(E::InvalidParameter {
            name: "beta_fast",
            ..
        })
    ));
    assert!(matches!(
        yarn(32.0, 1.0, -1.0, None).validate(),
        Err(E::InvalidParameter { name: "mscale", .. })
    ));
    assert!(matches!(
        yarn(32.0, 1.0, 0.0, Some(0.0)).validate(),
        Err(E::InvalidParameter {
            name: "attention_factor",
            ..
        })
    ));
    // Equal betas are allowed (HF widens the ramp by 0.001).
    assert!(yarn(8.0, 8.0, 0.0, None).frequencies(64, 1e4, 0).is_ok());

    let llama = |low: f64, high: f64| {
        Scaling::Llama3(Llama3 {
            factor: 8.0,
            low_freq_factor: low,
            high_freq_factor: high,
            original_max_position_embeddings: 8192,
        })
    };
    assert!(matches!(
        llama(4.0, 1.0).validate(),
        Err(E::LowFreqNotBelowHighFreq { .. })
    ));
    // Llama 4: equal factors, no blended band.
    assert!(llama(2.0, 2.0).validate().is_ok());
    assert!(matches!(
        llama(0.0, 4.0).validate(),
        Err(E::InvalidParameter {
            name: "low_freq_factor",
            ..
        })
    ));

    let lr = |short: Vec<f64>| {
        Scaling::LongRope(LongRope {
            short_factor: short,
            long_factor: vec![1.0; 4],
            original_max_position_embeddings: 4096,
            max_position_embeddings: 131_072,
            attention_factor: None,
        })
    };
    assert_eq!(
        lr(vec![1.0; 3]).frequencies(8, 1e4, 0),
        Err(E::FactorListLength {
            which: "short_factor",
            len: 3,
            expected: 4,
            rotary_dim: 8
        })
    );
    assert_eq!(
        lr(vec![1.0, 1.0, f64::NAN, 1.0])
            .validate()
            .map_err(|e| e.to_string()),
        Err("LongRoPE short_factor[2] must be finite and greater than 0, got NaN".to_string())
    );
    assert!(matches!(
        lr(vec![1.0, 0.0, 1.0, 1.0]).validate(),
        Err(E::FactorListValue { index: 1, .. })
    ));
    // A LongRoPE trained at one position cannot stretch: ln(1) = 0 in the denominator.
    let one = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 1,
        max_position_embeddings: 8,
        attention_factor: None,
    });
    assert!(matches!(
        one.frequencies(2, 1e4, 0),
        Err(E::NonFiniteResult { .. })
    ));
    // Overflow is reported, not returned.
    let huge = Scaling::NtkAware { factor: 1e300 };
    assert!(matches!(
        huge.frequencies(4, 1e300, 0),
        Err(E::NonFiniteResult { .. })
    ));
}

#[test]
fn error_messages_say_what_to_do() {
    let e = Scaling::Default
        .frequencies(7, 1e4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("even") && e.contains("7"), "{e}");
    let e = Scaling::Linear { factor: 0.5 }
        .frequencies(8, 1e4, 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 1") && e.contains("0.5"), "{e}");
}
