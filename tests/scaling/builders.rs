//! Each scaling type's frequency builder on its own: the default inverse frequencies, dynamic
//! and NTK-aware scaling, YaRN's bands and attention factor, Llama 3's bands, LongRope's lists.

use super::assert_rel;
use std::f64::consts::PI;
use wgpu_posenc::{LongRope, Scaling, Yarn, frequencies::default_inv_freq};

#[test]
fn default_inv_freq_is_the_documented_expression() {
    let f = default_inv_freq(128, 10_000.0).unwrap();
    assert_eq!(f.len(), 64);
    // The double-double value rounded to f64: within one ulp of libm's powf (which
    // need not be correctly rounded).
    for (j, x) in f.iter().enumerate() {
        let p = 10_000f64.powf(-(2.0 * j as f64) / 128.0);
        assert!((x - p).abs() <= f64::EPSILON * p, "{j}: {x} vs {p}");
    }
    assert_eq!(f[0], 1.0);
    assert!(default_inv_freq(0, 10_000.0).unwrap().is_empty());
    let d = Scaling::Default.frequencies(128, 10_000.0, 0).unwrap();
    assert_eq!(d.inv_freq, f);
    assert_eq!(d.attention_factor, 1.0);
}

#[test]
fn dynamic_ntk_is_unscaled_up_to_the_original_length_and_grows_after() {
    let s = Scaling::DynamicNtk {
        factor: 2.0,
        original_max_position_embeddings: 2048,
    };
    let plain = default_inv_freq(64, 10_000.0).unwrap();
    assert_eq!(s.frequencies(64, 10_000.0, 0).unwrap().inv_freq, plain);
    assert_eq!(s.frequencies(64, 10_000.0, 2048).unwrap().inv_freq, plain);
    let longer = s.frequencies(64, 10_000.0, 2049).unwrap().inv_freq;
    assert_eq!(longer[0], 1.0);
    assert!(longer[1..].iter().zip(&plain[1..]).all(|(a, b)| a < b));
}

#[test]
fn ntk_aware_matches_its_base_change() {
    let got = Scaling::NtkAware { factor: 8.0 }
        .frequencies(128, 10_000.0, 0)
        .unwrap();
    let base = 10_000.0 * 8f64.powf(128.0 / 126.0);
    assert_eq!(got.inv_freq, default_inv_freq(128, base).unwrap());
    // The lowest frequency is divided by exactly `factor`: that is the point of r/(r-2).
    let plain = default_inv_freq(128, 10_000.0).unwrap();
    assert_rel("ntk", "last", got.inv_freq[63] * 8.0, plain[63]);
}

#[test]
fn yarn_keeps_high_and_interpolates_low_frequencies() {
    let f = Scaling::yarn(4.0, 32_768).frequencies(128, 1e6, 0).unwrap();
    let plain = default_inv_freq(128, 1e6).unwrap();
    assert_rel("yarn", "first", f.inv_freq[0], plain[0]);
    assert_rel("yarn", "last", f.inv_freq[63] * 4.0, plain[63]);
    assert_rel(
        "yarn",
        "attention",
        f.attention_factor,
        0.1 * 4f64.ln() + 1.0,
    );
    // factor 1: nothing to interpolate, attention factor 1.
    let one = Scaling::yarn(1.0, 4096)
        .frequencies(64, 10_000.0, 0)
        .unwrap();
    for (a, b) in one
        .inv_freq
        .iter()
        .zip(default_inv_freq(64, 10_000.0).unwrap())
    {
        assert_rel("yarn1", "inv_freq", *a, b);
    }
    assert_eq!(one.attention_factor, 1.0);
}

#[test]
fn yarn_attention_factor_rules() {
    let with = |mscale: f64, mscale_all_dim: f64, attention_factor: Option<f64>| {
        Scaling::Yarn(Yarn {
            factor: 40.0,
            original_max_position_embeddings: 4096,
            beta_fast: 32.0,
            beta_slow: 1.0,
            mscale,
            mscale_all_dim,
            attention_factor,
            truncate: true,
        })
        .frequencies(64, 10_000.0, 0)
        .unwrap()
        .attention_factor
    };
    let m = |m: f64| 0.1 * m * 40f64.ln() + 1.0;
    assert_eq!(with(0.707, 0.707, None), 1.0);
    assert_rel("yarn", "ratio", with(1.0, 0.707, None), m(1.0) / m(0.707));
    // Only one of the two given: HF falls back to get_mscale(factor).
    assert_rel("yarn", "mscale only", with(0.707, 0.0, None), m(1.0));
    assert_rel("yarn", "all_dim only", with(0.0, 0.707, None), m(1.0));
    assert_eq!(with(0.707, 0.707, Some(1.5)), 1.5);
}

#[test]
fn llama3_bands() {
    let f = Scaling::llama3().frequencies(128, 500_000.0, 0).unwrap();
    let plain = default_inv_freq(128, 500_000.0).unwrap();
    for (j, (g, p)) in f.inv_freq.iter().zip(&plain).enumerate() {
        let wavelen = 2.0 * PI / p;
        if wavelen < 8192.0 / 4.0 {
            assert_eq!(g, p, "pair {j} is high-frequency and must be kept");
        } else if wavelen > 8192.0 {
            assert_eq!(
                *g,
                p / 8.0,
                "pair {j} is low-frequency and must be divided by 8"
            );
        } else {
            assert!(*g < *p && *g > p / 8.0, "pair {j} must lie between");
        }
    }
    assert_eq!(f.attention_factor, 1.0);
}

#[test]
fn longrope_switches_factor_lists_after_the_original_length() {
    let s = Scaling::LongRope(LongRope {
        short_factor: vec![1.0, 2.0],
        long_factor: vec![4.0, 8.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 131_072,
        attention_factor: None,
    });
    let plain = default_inv_freq(4, 10_000.0).unwrap();
    let short = s.frequencies(4, 10_000.0, 4096).unwrap();
    let long = s.frequencies(4, 10_000.0, 4097).unwrap();
    assert_rel("longrope", "short0", short.inv_freq[0], plain[0]);
    assert_rel("longrope", "short1", short.inv_freq[1] * 2.0, plain[1]);
    assert_rel("longrope", "long1", long.inv_freq[1] * 8.0, plain[1]);
    assert_eq!(
        s.frequencies(4, 10_000.0, 0).unwrap().inv_freq,
        short.inv_freq
    );
    let expected = (1.0 + 32f64.ln() / 4096f64.ln()).sqrt();
    assert_rel("longrope", "attention", short.attention_factor, expected);
    assert_eq!(short.attention_factor, long.attention_factor);
    // No stretch, no attention change; an explicit factor wins.
    let same = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 4096,
        attention_factor: None,
    });
    assert_eq!(
        same.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
        1.0
    );
    let given = Scaling::LongRope(LongRope {
        short_factor: vec![1.0],
        long_factor: vec![1.0],
        original_max_position_embeddings: 4096,
        max_position_embeddings: 131_072,
        attention_factor: Some(1.25),
    });
    assert_eq!(
        given.frequencies(2, 10_000.0, 0).unwrap().attention_factor,
        1.25
    );
}
