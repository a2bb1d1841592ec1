//! The host-side frequency builders of every scaling type against golden values computed
//! independently (`tests/data/rope_scaling_golden.py`, Python floats from the published
//! formulas), their edge cases and errors, and `Scaling::from_hf_config`.
#![cfg(not(target_arch = "wasm32"))]

#[path = "scaling/builders.rs"]
mod builders;
#[path = "scaling/errors.rs"]
mod errors;
#[cfg(feature = "hf-config")]
#[path = "scaling/hf_config.rs"]
mod hf_config;

use serde_json::Value;
use wgpu_posenc::{Llama3, LongRope, Scaling, Yarn};

/// Typed reads of golden JSON values (panicking on malformed data, as test fixtures should).
trait Golden {
    fn key(&self, key: &str) -> &Value;
    fn num(&self) -> f64;
    fn opt_num(&self) -> Option<f64>;
    fn str(&self) -> &str;
    fn arr(&self) -> &[Value];
    fn nums(&self) -> Vec<f64>;
}

impl Golden for Value {
    fn key(&self, key: &str) -> &Value {
        &self[key]
    }
    fn num(&self) -> f64 {
        self.as_f64()
            .unwrap_or_else(|| panic!("expected a number, got {self}"))
    }
    fn opt_num(&self) -> Option<f64> {
        if self.is_null() {
            None
        } else {
            Some(self.num())
        }
    }
    fn str(&self) -> &str {
        self.as_str()
            .unwrap_or_else(|| panic!("expected a string, got {self}"))
    }
    fn arr(&self) -> &[Value] {
        self.as_array()
            .unwrap_or_else(|| panic!("expected an array, got {self}"))
    }
    fn nums(&self) -> Vec<f64> {
        self.arr().iter().map(Golden::num).collect()
    }
}

const GOLDEN: &str = include_str!("data/rope_scaling_golden.json");

/// The explicit scaling of a golden case.
fn scaling_of(s: &Value) -> Scaling {
    let u = |k: &str| s.key(k).num() as u64;
    match s.key("type").str() {
        "default" => Scaling::Default,
        "linear" => Scaling::Linear {
            factor: s.key("factor").num(),
        },
        "ntk_aware" => Scaling::NtkAware {
            factor: s.key("factor").num(),
        },
        "dynamic_ntk" => Scaling::DynamicNtk {
            factor: s.key("factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
        },
        "yarn" => Scaling::Yarn(Yarn {
            factor: s.key("factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
            beta_fast: s.key("beta_fast").num(),
            beta_slow: s.key("beta_slow").num(),
            mscale: s.key("mscale").num(),
            mscale_all_dim: s.key("mscale_all_dim").num(),
            attention_factor: s.key("attention_factor").opt_num(),
            truncate: s.key("truncate").as_bool() == Some(true),
        }),
        "llama3" => Scaling::Llama3(Llama3 {
            factor: s.key("factor").num(),
            low_freq_factor: s.key("low_freq_factor").num(),
            high_freq_factor: s.key("high_freq_factor").num(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
        }),
        "longrope" => Scaling::LongRope(LongRope {
            short_factor: s.key("short_factor").nums(),
            long_factor: s.key("long_factor").nums(),
            original_max_position_embeddings: u("original_max_position_embeddings"),
            max_position_embeddings: u("max_position_embeddings"),
            attention_factor: s.key("attention_factor").opt_num(),
        }),
        other => panic!("unknown golden scaling type {other}"),
    }
}

fn assert_rel(name: &str, what: &str, got: f64, want: f64) {
    let err = ((got - want) / want).abs();
    assert!(
        err <= 1e-12,
        "{name}: {what}: got {got:e}, want {want:e} (relative error {err:e})"
    );
}

fn golden_cases() -> Vec<Value> {
    serde_json::from_str::<Value>(GOLDEN)
        .expect("golden json")
        .key("cases")
        .arr()
        .to_vec()
}

#[test]
fn golden_values_match_to_1e_12() {
    let cases = golden_cases();
    assert!(cases.len() >= 17, "golden file has {} cases", cases.len());
    for case in &cases {
        let name = case.key("name").str();
        let scaling = scaling_of(case.key("scaling"));
        let r = case.key("rotary_dim").num() as u32;
        let base = case.key("base").num();
        let seq_len = case.key("seq_len").num() as u64;
        let got = scaling
            .frequencies(r, base, seq_len)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = case.key("inv_freq").nums();
        assert_eq!(got.inv_freq.len(), want.len(), "{name}: length");
        for (j, (g, w)) in got.inv_freq.iter().zip(&want).enumerate() {
            assert_rel(name, &format!("inv_freq[{j}]"), *g, *w);
        }
        assert_rel(
            name,
            "attention_factor",
            got.attention_factor,
            case.key("attention_factor").num(),
        );
    }
}

#[test]
fn golden_covers_every_scaling_type() {
    let kinds: Vec<String> = golden_cases()
        .iter()
        .map(|c| c.key("scaling").key("type").str().to_string())
        .collect();
    for k in [
        "default",
        "linear",
        "dynamic_ntk",
        "ntk_aware",
        "yarn",
        "llama3",
        "longrope",
    ] {
        assert!(kinds.iter().any(|x| x == k), "no golden case for {k}");
    }
}
