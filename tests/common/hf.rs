//! The golden data under `tests/data/` (HF's under `hf/`), for the tests that read it.

use serde_json::Value;

/// `tests/data/hf/{path}`, parsed (a test fails with the path when it is missing or bad).
pub fn hf_data(path: &str) -> Value {
    test_data(&format!("hf/{path}"))
}

/// `tests/data/{path}`, parsed (a test fails with the path when it is missing or bad).
pub fn test_data(path: &str) -> Value {
    let full = format!("{}/tests/data/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// A JSON array of positions.
pub fn u32s(v: &Value) -> Vec<u32> {
    v.as_array()
        .expect("positions")
        .iter()
        .map(|x| x.as_u64().expect("position") as u32)
        .collect()
}
