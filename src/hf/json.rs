//! Typed reads of `serde_json` values with errors that name the key.

use serde_json::Value;

use super::Obj;
use crate::frequencies::FrequencyError;

pub(super) fn object(config: &Value) -> Result<&Obj, FrequencyError> {
    config.as_object().ok_or(FrequencyError::ConfigNotObject {
        found: kind(config),
    })
}

pub(super) fn str_key<'a>(obj: &'a Obj, key: &str) -> Result<Option<&'a str>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(invalid(key, "a string", v)),
    }
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn invalid(key: &str, expected: &'static str, v: &Value) -> FrequencyError {
    let mut found = v.to_string();
    if found.len() > 80 {
        found.truncate(found.char_indices().nth(77).map_or(found.len(), |(i, _)| i));
        found.push_str("...");
    }
    FrequencyError::InvalidConfigValue {
        key: key.to_string(),
        expected,
        found,
    }
}

/// A number, or `None` when the key is missing or null.
pub(super) fn opt_f64(obj: &Obj, key: &str) -> Result<Option<f64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| invalid(key, "a number", v)),
    }
}

/// A whole number, or `None` when the key is missing or null. Accepts `4096` and `4096.0`.
pub(super) fn opt_u64(obj: &Obj, key: &str) -> Result<Option<u64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            if let Some(n) = v.as_u64() {
                return Ok(Some(n));
            }
            match v.as_f64() {
                Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 1.8e19 => Ok(Some(x as u64)),
                _ => Err(invalid(key, "a non-negative whole number", v)),
            }
        }
    }
}

pub(super) fn factor_list(
    obj: &Obj,
    key: &'static str,
    rope_type: &str,
) -> Result<Vec<f64>, FrequencyError> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(FrequencyError::MissingConfigKey {
            key,
            rope_type: rope_type.to_string(),
        }),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_f64()
                    .ok_or_else(|| invalid(&format!("{key}[{i}]"), "a number", v))
            })
            .collect(),
        Some(v) => Err(invalid(key, "an array of numbers", v)),
    }
}

/// Python truthiness of a config value, the way HF's `x or default` reads it.
pub(super) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// HF's `get(key) or default` for a number.
pub(super) fn f64_or(obj: &Obj, key: &str, default: f64) -> Result<f64, FrequencyError> {
    match obj.get(key) {
        Some(v) if truthy(v) => v.as_f64().ok_or_else(|| invalid(key, "a number", v)),
        _ => Ok(default),
    }
}
