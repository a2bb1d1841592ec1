//! Random position grids (`PositionGrid`, `encode_position_grid`): segments of any count,
//! shape and axes (bad ones among them: no segments, too many, a zero or huge extent, six
//! dimensions, axes that disagree, sums past 2^24, NaN, infinite and subnormal-making
//! scales), the models' recipes at any sides (0 and `u32::MAX` among them), any batch, and
//! output views short, misaligned or without `STORAGE`. Each call is an error, or writes
//! the host's values bit for bit with the words around them unchanged. With `hf-config`,
//! Mochi's checkpoint reader on safetensors files cut short or with a byte changed.

use proptest::prelude::*;
use wgpu_posenc::{GRID_DIMS, GridAxis, GridSegment, PositionGrid};

use super::common::{ctx, read_back};

/// A random grid call: the grid, the batch, and where its output goes.
#[derive(Clone, Debug)]
pub struct GridCase {
    grid: PositionGrid,
    batch: u64,
    /// Words of poison before the output (4-byte offset), or a misaligned byte offset.
    lead: u64,
    misaligned: bool,
    /// Words the output has room for beyond what the call needs (negative: short).
    room: i64,
    storage: bool,
}

fn axis_strategy() -> impl Strategy<Value = GridAxis> {
    let int = prop_oneof![
        8 => -6i32..7,
        1 => Just(i32::MAX),
        1 => Just(i32::MIN),
        1 => Just(1 << 24),
    ];
    let scale = prop::sample::select(vec![
        1.0f32,
        1.0,
        0.5,
        1.0 / 3.0,
        -2.0,
        0.0,
        f32::NAN,
        f32::INFINITY,
        1e-30,
        1e30,
    ]);
    (int.clone(), prop::collection::vec(int, GRID_DIMS), scale).prop_map(
        |(offset, steps, scale)| {
            let mut s = [0; GRID_DIMS];
            s.copy_from_slice(&steps);
            GridAxis::sum(s).plus(offset).scaled(scale)
        },
    )
}

fn segment_strategy(axes: usize) -> impl Strategy<Value = GridSegment> {
    let extent =
        prop_oneof![10 => 1u32..7, 1 => Just(0u32), 1 => Just(u32::MAX), 1 => Just(1 << 20)];
    let dims = prop_oneof![10 => 1usize..=GRID_DIMS, 1 => Just(0usize), 1 => Just(GRID_DIMS + 1)];
    let count = prop_oneof![10 => Just(axes), 1 => 0usize..6];
    (dims, count).prop_flat_map(move |(dims, count)| {
        (
            prop::collection::vec(extent.clone(), dims),
            prop::collection::vec(axis_strategy(), count),
        )
            .prop_map(|(shape, axes)| GridSegment::new(&shape, &axes))
    })
}

/// One of the models' recipes at random sides.
fn recipe_strategy() -> impl Strategy<Value = PositionGrid> {
    let side =
        prop_oneof![10 => 1u32..40, 1 => Just(0u32), 1 => Just(u32::MAX), 1 => Just(1 << 16)];
    (0u8..11, side.clone(), side.clone(), side, 0u32..40).prop_map(|(k, a, b, c, text)| {
        let or_empty = |g: wgpu_posenc::Result<PositionGrid>| g.unwrap_or(PositionGrid::new(3));
        match k {
            0 => PositionGrid::flux(text, [a, b]),
            1 => PositionGrid::flux_kontext(text, [a, b], [c, a]),
            2 => PositionGrid::flux2(text, [a, b], &[[c, a], [b, c]]),
            3 => PositionGrid::video([a, b, c]).text_zeros(text),
            4 => PositionGrid::qwen_image(text, &[[a % 4, b, c], [1, c, b]]),
            5 => or_empty(PositionGrid::merge_blocks([a, b, c], text % 4)),
            6 => or_empty(PositionGrid::cogvideox(text, a, [b, c], [c % 60, b % 90])),
            7 => PositionGrid::mochi([a, b, c]),
            8 => PositionGrid::dinov3(text % 6, [a, b]),
            9 => or_empty(PositionGrid::ltx_video([a, b, c], text)),
            _ => PositionGrid::new(3).text_zeros(text),
        }
    })
}

pub fn grid_strategy() -> impl Strategy<Value = GridCase> {
    let axes = prop_oneof![10 => prop::sample::select(vec![1usize, 3, 4]), 1 => Just(2usize), 1 => Just(5usize)];
    let built = axes.prop_flat_map(|axes| {
        let count = prop_oneof![10 => 1usize..6, 1 => Just(0usize), 1 => Just(17usize)];
        count.prop_flat_map(move |n| {
            prop::collection::vec(segment_strategy(axes), n)
                .prop_map(move |segments| PositionGrid { axes, segments })
        })
    });
    let grid = prop_oneof![3 => built, 2 => recipe_strategy()];
    let batch = prop_oneof![10 => 1u64..4, 1 => Just(0u64), 1 => Just(u64::MAX)];
    let room = prop_oneof![10 => 0i64..9, 1 => -3i64..0];
    (
        grid,
        batch,
        0u64..70,
        prop::bool::weighted(0.05),
        room,
        prop::bool::weighted(0.97),
    )
        .prop_map(|(grid, batch, lead, misaligned, room, storage)| GridCase {
            grid,
            batch,
            lead,
            misaligned,
            room,
            storage,
        })
}

/// Runs a case: `Ok(true)` where the GPU's values were compared with the host's.
pub fn run_grid(case: &GridCase) -> Result<bool, String> {
    let valid = case.grid.validate().is_ok();
    let values = case
        .grid
        .tokens()
        .saturating_mul(case.batch)
        .saturating_mul(case.grid.axes as u64);
    // The output: poison, then room for `values + room` words, then 5 words more of poison,
    // or a little buffer where the call needs more than a few MB.
    let room = (values.min(1 << 20) as i64 + case.room).max(0) as u64;
    let total = case.lead + room + 5;
    let initial: Vec<u32> = (0..total).map(|i| 0x7fc0_0000 | i as u32).collect();
    let usage = match case.storage {
        true => wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        false => wgpu::BufferUsages::COPY_SRC,
    };
    let buffer = wgpu::util::DeviceExt::create_buffer_init(
        ctx().device(),
        &wgpu::util::BufferInitDescriptor {
            label: Some("random position grid"),
            contents: bytemuck::cast_slice(&initial),
            usage,
        },
    );
    let offset = case.lead * 4 + u64::from(case.misaligned) * 2;
    let out = wgpu_posenc::ArrayView::at(&buffer, offset);
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    let result = ctx().encode_position_grid(&mut encoder, &case.grid, case.batch, out);
    // The view runs to the buffer's end: the 5 words after the room count too.
    let fits = room + 5 >= values && values <= 1 << 20;
    if result.is_ok() && !(valid && case.storage && !case.misaligned && fits) {
        return Err(format!(
            "accepted: valid {valid}, {values} values into {room}"
        ));
    }
    let got = read_back(&buffer, encoder);
    let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
    let (lead, n) = (case.lead as usize, values as usize);
    if result.is_err() {
        return match got == initial {
            true => Ok(false),
            false => Err("a refused call wrote".into()),
        };
    }
    let host = case
        .grid
        .positions(case.batch)
        .map_err(|e| format!("host: {e}"))?;
    for (i, (&g, &w)) in got.iter().zip(&initial).enumerate() {
        let want = match i.checked_sub(lead) {
            Some(k) if k < n => host[k].to_bits(),
            _ => w,
        };
        if g != want {
            return Err(format!("word {i}: {g:#x}, want {want:#x}"));
        }
    }
    Ok(true)
}

/// Mochi's checkpoint reader on a safetensors file of its table, cut at `cut` bytes and with
/// byte `at` set to `byte`: a reading, or a typed error (the file's, or a table value that
/// is not finite or too large), never a panic.
#[cfg(feature = "hf-config")]
pub fn run_checkpoint(cut: usize, at: usize, byte: u8) -> Result<(), String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/diffusers/mochi_pos_frequencies.safetensors"
    );
    let mut file = std::fs::read(path).map_err(|e| e.to_string())?;
    let config = serde_json::json!({"_class_name": "MochiTransformer3DModel"});
    if let Some(b) = file.get_mut(at) {
        *b = byte;
    }
    file.truncate(cut.min(file.len()));
    let read = wgpu_posenc::RotaryModule::from_diffusers_checkpoint(
        &config,
        &mut std::io::Cursor::new(&file),
    );
    match read {
        Ok(m) if m.len() == 1 && m[0].spec.learned.is_some() => Ok(()),
        Ok(m) => Err(format!("read {m:?}")),
        Err(wgpu_posenc::Error::InvalidCheckpoint { .. }) => Ok(()),
        // A byte of a value changed to a NaN or a huge one.
        Err(wgpu_posenc::Error::InvalidParameter {
            what: "learned frequency",
            ..
        }) => Ok(()),
        Err(e) => Err(format!("not a checkpoint error: {e}")),
    }
}
