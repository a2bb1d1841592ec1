//! One tensor out of a safetensors file (the `model.safetensors` that diffusers'
//! `save_pretrained` writes, or one shard of it): the 8-byte little-endian header length,
//! the JSON header (`{name: {dtype, shape, data_offsets}}`), then the data; only the header
//! and the one tensor's bytes are read.

use std::io::{Read, Seek, SeekFrom};

use serde_json::Value;

use crate::error::{Error, Result};

/// The largest header read (safetensors' own limit is 100 MB).
const MAX_HEADER: u64 = 100 << 20;
/// The most values read for one tensor.
const MAX_VALUES: u64 = 1 << 28;

/// A tensor read from a safetensors file: its shape and its values widened to f64.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tensor {
    pub shape: Vec<u64>,
    pub values: Vec<f64>,
}

fn bad(reason: String) -> Error {
    Error::InvalidCheckpoint { reason }
}

/// Reads tensor `name` (F32, F64, F16 or BF16) from `file`.
pub(crate) fn read_tensor(file: &mut (impl Read + Seek), name: &str) -> Result<Tensor> {
    let io = |e: std::io::Error| bad(format!("reading the safetensors file: {e}"));
    let mut len = [0u8; 8];
    file.read_exact(&mut len).map_err(io)?;
    let len = u64::from_le_bytes(len);
    if len > MAX_HEADER {
        return Err(bad(format!(
            "a header of {len} bytes: not a safetensors file (at most 100 MB)"
        )));
    }
    let mut header = vec![0u8; len as usize];
    file.read_exact(&mut header).map_err(io)?;
    let header: Value =
        serde_json::from_slice(&header).map_err(|e| bad(format!("the header is not JSON: {e}")))?;
    let Some(entry) = header.get(name) else {
        return Err(bad(format!(
            "no tensor {name} in this file (a sharded checkpoint: pass the shard that \
             model.safetensors.index.json's weight_map names for it)"
        )));
    };
    let (dtype, shape, [start, end]) = parse_entry(name, entry)?;
    let size = match dtype {
        "F64" => 8,
        "F32" => 4,
        "F16" | "BF16" => 2,
        other => {
            return Err(bad(format!(
                "{name} is {other}: F32, F64, F16 or BF16 are read"
            )));
        }
    };
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let count = count.filter(|&n| n <= MAX_VALUES).ok_or_else(|| {
        bad(format!(
            "{name} of shape {shape:?}: at most 2^28 values are read"
        ))
    })?;
    if end.checked_sub(start) != Some(count * size) {
        return Err(bad(format!(
            "{name}: data_offsets [{start}, {end}] do not hold {count} {dtype} values"
        )));
    }
    let at = 8u64.saturating_add(len).saturating_add(start);
    file.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut bytes = vec![0u8; (count * size) as usize];
    file.read_exact(&mut bytes).map_err(io)?;
    let values = bytes
        .chunks_exact(size as usize)
        .map(|b| widen(dtype, b))
        .collect();
    Ok(Tensor { shape, values })
}

/// The entry's dtype, shape and data offsets.
fn parse_entry<'a>(name: &str, entry: &'a Value) -> Result<(&'a str, Vec<u64>, [u64; 2])> {
    let broken = || {
        bad(format!(
            "the header's entry for {name} is not {{dtype, shape, data_offsets}}"
        ))
    };
    let dtype = entry
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(broken)?;
    let shape = entry
        .get("shape")
        .and_then(Value::as_array)
        .and_then(|s| s.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        .ok_or_else(broken)?;
    let offsets = entry
        .get("data_offsets")
        .and_then(Value::as_array)
        .and_then(|o| o.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
        .filter(|o| o.len() == 2)
        .ok_or_else(broken)?;
    Ok((dtype, shape, [offsets[0], offsets[1]]))
}

/// One little-endian value of `dtype` as f64 (every one exactly).
fn widen(dtype: &str, b: &[u8]) -> f64 {
    match dtype {
        "F64" => f64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        "F32" => f64::from(f32::from_le_bytes(b.try_into().unwrap_or([0; 4]))),
        "BF16" => {
            let bits = u16::from_le_bytes([b[0], b[1]]);
            f64::from(f32::from_bits(u32::from(bits) << 16))
        }
        _ => f16_value(u16::from_le_bytes([b[0], b[1]])),
    }
}

/// An IEEE binary16 value.
fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1024.0 + mantissa) * 2f64.powi(e - 25),
    }
}
